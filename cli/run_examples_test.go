package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunExamples runs every example end to end with `stratum run` and real
// child-process agents: the five-construct one exercises do, set, a gate
// (approved), an engine fanout and a subflow.
func TestRunExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example agent")
	}
	dir := t.TempDir()
	qa := filepath.Join(dir, "quickstart-agent")
	if out, err := exec.Command("go", "build", "-o", qa, "../examples/agents/quickstart-agent").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	tests := []struct {
		example, input, agent string
		wantStderr            []string
	}{
		{"code-review", `{"files": ["main.go"]}`, qa, nil},
		{"five-constructs", `{"topic": "t", "items": ["a", "b", "c"]}`, qa,
			[]string{"review: gate resolved: approve", "inspect[2]: stage 1 attempt 1 accepted", "child/write_summary: attempt 1 accepted"}},
		{"flow-composition", `{"project": "p"}`, qa, []string{"test/run_tests: attempt 1 accepted"}},
		{"full-gate", `{"text": "t"}`, qa, []string{"review: gate resolved: approve"}},
		// The example agent's first quality (0.9) misses 0.95; told so, it
		// improves.
		{"iterate", `{"brief": "b"}`, qa, []string{`improve: attempt 1 rejected: iterate until "result.quality >= 0.95" failed`, "improve: attempt 2 accepted"}},
		{"minimal", `{"text": "t"}`, qa, nil},
		{"on-fail-routing", `{"spec": "s"}`, qa, []string{"recover: skipped"}},
		// The README's main job: the example agent answers "draft" wrongly
		// once, so the user sees a failed ensure and the retry.
		{"quickstart", `{"topic": "t"}`, qa, []string{`draft: attempt 1 rejected: ensure "result.confidence >= 0.8" failed`, "draft: attempt 2 accepted"}},
	}
	examples, _ := filepath.Glob("../examples/*.stratum.yaml")
	if len(examples) != len(tests) {
		t.Errorf("%d examples, %d tested: add the new example here", len(examples), len(tests))
	}
	home := filepath.Join(dir, "home")
	for _, tt := range tests {
		t.Run(tt.example, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			env := &Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: func(k string) string {
				if k == "STRATUM_HOME" {
					return home
				}
				if k == "STRATUM_STATE_ROOT" {
					return ""
				}
				return os.Getenv(k)
			}}
			code := run(context.Background(), env, []string{"run", "../examples/" + tt.example + ".stratum.yaml",
				"--input-json", tt.input, "--agent", tt.agent, "--gate", "approve", "--workspace", dir})
			if code != 0 || !strings.Contains(stderr.String(), " completed\n") {
				t.Fatalf("exit %d\n%s", code, stderr.String())
			}
			for _, want := range tt.wantStderr {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("progress lacks %q:\n%s", want, stderr.String())
				}
			}
			if !strings.HasPrefix(stdout.String(), "{") {
				t.Errorf("stdout is not the output object: %q", stdout.String())
			}
		})
	}
}
