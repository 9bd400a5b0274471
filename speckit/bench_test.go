package speckit

import (
	"fmt"
	"testing"
)

// BenchmarkCompile compiles 100 tasks (groups of parallel tasks between
// sequential ones, four criteria each) from memory, including validation.
func BenchmarkCompile(b *testing.B) {
	var files []source
	for i := 0; i < 100; i++ {
		marker := ""
		if i%4 != 0 {
			marker = "[P] "
		}
		files = append(files, source{
			name: fmt.Sprintf("%03d-task.md", i),
			text: fmt.Sprintf("# Task: %sTask %d\n\nDo the thing number %d.\nSecond line.\n\n## Acceptance Criteria\n- [ ] file out/%d.txt exists\n- [ ] file out/%d.txt contains \"done\"\n- [ ] tests pass\n- [ ] It reads well\n", marker, i, i, i, i),
		})
	}
	for b.Loop() {
		if _, err := compileSources(files, ""); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseTask parses one typical task file.
func BenchmarkParseTask(b *testing.B) {
	text := "# Task: [P] Implement authentication\n\nAdd JWT-based authentication to the API.\n\n## Acceptance Criteria\n\n- [ ] file src/auth/middleware.ts exists\n- [x] tests pass\n- [ ] Error messages are user-friendly\n"
	for b.Loop() {
		ParseTask("01-auth.md", text)
	}
}
