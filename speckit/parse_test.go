package speckit

import (
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCriterionLines(t *testing.T) {
	// Expected values were checked against JavaScript's regular expression
	// semantics (the reference's), which differ from Go's \s, \S and (?i).
	tests := []struct {
		line string
		want *Predicate // nil: judgment
		text string     // the criterion text; "-" means the line is no criterion
	}{
		{"- [ ] file src/a.ts exists", &Predicate{FileExists: "src/a.ts"}, "file src/a.ts exists"},
		{"- [x] FILE a EXIST", &Predicate{FileExists: "a"}, "FILE a EXIST"},
		{"  -[X]file a exists", &Predicate{FileExists: "a"}, "file a exists"},
		{"- [ ] file a b exists", nil, "file a b exists"},
		{`- [ ] file a contains "x y"`, &Predicate{FileContains: &FileContains{Path: "a", Text: "x y"}}, `file a contains "x y"`},
		{`- [ ] file a contains 'it"s'`, &Predicate{FileContains: &FileContains{Path: "a", Text: `it\"s`}}, `file a contains 'it"s'`},
		{"- [ ] file a contains word", &Predicate{FileContains: &FileContains{Path: "a", Text: "word"}}, "file a contains word"},
		{"- [ ] file a contains two words", nil, "file a contains two words"},
		{`- [ ] file a contains with"quotes`, &Predicate{FileContains: &FileContains{Path: "a", Text: `with\"quotes`}}, `file a contains with"quotes`},
		{`- [ ] file a contain ""`, &Predicate{FileContains: &FileContains{Path: "a", Text: `\"\"`}}, `file a contain ""`},
		{"- [ ] all tests pass", &Predicate{Expr: "result.tests_pass == true"}, "all tests pass"},
		{"- [ ] test passes", &Predicate{Expr: "result.tests_pass == true"}, "test passes"},
		{"- [ ] tests are passing", &Predicate{Expr: "result.tests_pass == true"}, "tests are passing"},
		{"- [ ] contest passes", nil, "contest passes"},
		{"- [ ] testing passes", nil, "testing passes"},
		{"- [ ] Tests Pass and no lint errors", &Predicate{Expr: "result.tests_pass == true"}, "Tests Pass and no lint errors"},
		{"- [ ] No Lint Errors", &Predicate{Expr: "result.lint_clean == true"}, "No Lint Errors"},
		{"- [ ] lint passes", &Predicate{Expr: "result.lint_clean == true"}, "lint passes"},
		{"- [ ] the lint clean-up is done", &Predicate{Expr: "result.lint_clean == true"}, "the lint clean-up is done"},
		{"- [ ] lint  clean", nil, "lint  clean"},
		{"- [ ] the linter is clean", nil, "the linter is clean"},
		{"- []  x", nil, "-"},
		{"* [ ] x", nil, "-"},
		{"- [ ] ", nil, ""},
		{"- [ ]  ", nil, ""},
		{"- [ ]", nil, "-"},
		{"- [ ] \r x", nil, "x"},
		{"- [ ] a\rb", nil, "-"},
		{"- [ ]\u2028x", nil, "x"},
		{"- [ ] x\u2028", nil, "-"},
		{"\u00a0- [ ]\u00a0y\u00a0", nil, "y"},
		{"- [ ] teſts pass", nil, "teſts pass"},
		{"- [ ] file a exiſts", nil, "file a exiſts"},
		{"- [ ] \ufefffile a exists", &Predicate{FileExists: "a"}, "file a exists"},
		{"- [ ] file\u00a0a\u00a0exists", &Predicate{FileExists: "a"}, "file\u00a0a\u00a0exists"},
		{"- [ ] file a\u2003contains\u2003\"q\"", &Predicate{FileContains: &FileContains{Path: "a", Text: "q"}}, "file a\u2003contains\u2003\"q\""},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			text, ok := criterion(tt.line)
			if tt.text == "-" {
				if ok {
					t.Fatalf("criterion(%q) = %q, want no criterion", tt.line, text)
				}
				return
			}
			if !ok || text != tt.text {
				t.Fatalf("criterion(%q) = %q, %v; want %q", tt.line, text, ok, tt.text)
			}
			p, compiled := CompileCriterion(text)
			if tt.want == nil {
				if compiled {
					t.Fatalf("CompileCriterion(%q) = %+v, want judgment", text, p)
				}
				return
			}
			if diff := cmp.Diff(*tt.want, p); diff != "" {
				t.Fatalf("CompileCriterion(%q) (-want +got):\n%s", text, diff)
			}
		})
	}
}

func TestParseTask(t *testing.T) {
	tests := []struct {
		name, text string
		want       Task
	}{
		{
			name: "01-auth.md",
			text: "# Task: [P] Implement authentication\n\nAdd JWT-based authentication to the API.\n\n## Acceptance Criteria\n\n- [ ] file src/auth/middleware.ts exists\n- [x] tests pass\n- [ ] Error messages are user-friendly\n",
			want: Task{ID: "t01_auth", Title: "Implement authentication", Parallel: true,
				Description: "Add JWT-based authentication to the API.",
				Ensures:     []Predicate{{FileExists: "src/auth/middleware.ts"}, {Expr: "result.tests_pass == true"}},
				Judgment:    []string{"Error messages are user-friendly"}},
		},
		{
			name: "plain.md",
			text: "no heading here\nsecond line\nthird",
			want: Task{ID: "plain", Description: "second line\nthird"},
		},
		{
			name: "crlf.md",
			text: "### Build it\r\nline one\r\n\r\n## acceptance criteria for release\r\n- [ ] tests pass\r\n",
			want: Task{ID: "crlf", Title: "Build it", Description: "line one",
				Ensures: []Predicate{{Expr: "result.tests_pass == true"}}},
		},
		{
			name: "markers.md",
			text: "  ##Task:[p]Split [P]  it [P]\nbody",
			want: Task{ID: "markers", Title: "Split it", Parallel: true, Description: "body"},
		},
		{
			name: "task-colon-case.md",
			text: "# task: lower case is kept\n",
			want: Task{ID: "task_colon_case", Title: "task: lower case is kept"},
		},
		{
			name: "only-marker.md",
			text: "# [P]\n",
			want: Task{ID: "only_marker", Parallel: true},
		},
		{
			name: "hash-only.md",
			text: "#\n#\n",
			want: Task{ID: "hash_only", Description: "#"},
		},
		{
			name: "header-is-title.md",
			text: "## Acceptance Criteria\n- [ ] file x exists\n",
			want: Task{ID: "header_is_title", Title: "Acceptance Criteria", Ensures: []Predicate{{FileExists: "x"}}},
		},
		{
			name: "indented-header.md",
			text: "# T\n  ## Acceptance Criteria\n- [ ] tests pass\n",
			want: Task{ID: "indented_header", Title: "T", Description: "## Acceptance Criteria\n- [ ] tests pass"},
		},
		{
			name: "criteria-span-headings.md",
			text: "# T\ndesc\n## Acceptance Criteria\n- [ ] a\n## Notes\n- [ ] b\n* [ ] c\n",
			want: Task{ID: "criteria_span_headings", Title: "T", Description: "desc", Judgment: []string{"a", "b"}},
		},
		{
			name: "title-late.md",
			text: "preamble\n\n# Title\nbody\n",
			want: Task{ID: "title_late", Title: "Title", Description: "body"},
		},
		{
			name: "empty.md",
			text: "",
			want: Task{ID: "empty"},
		},
		{
			name: "bad-utf8.md",
			text: "# caf\xe9\n",
			want: Task{ID: "bad_utf8", Title: "caf\uFFFD"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseTask(tt.name, tt.text)
			want := tt.want
			want.File = tt.name
			if want.Ensures == nil {
				want.Ensures = []Predicate{}
			}
			if want.Judgment == nil {
				want.Judgment = []string{}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

var stepIDPattern = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

func TestStepID(t *testing.T) {
	tests := map[string]string{
		"01-research.md":   "t01_research",
		"02a-backend.md":   "t02a_backend",
		"my task.md":       "my_task",
		"MyTask.md":        "mytask",
		"research.md":      "research",
		".md":              "md",
		"..md":             "task",
		"---.md":           "task",
		"_a__b_.md":        "a__b",
		"x.tar.md":         "x_tar",
		"é-1.md":           "t1",
		"Kelvin-\u212a.md": "kelvin_k",
		"\u0130x.md":       "i_x",
		"😀a.md":            "a",
		"a😀.md":            "a",
		"a😀b.md":           "a__b",
	}
	for name, want := range tests {
		got := StepID(name)
		if got != want {
			t.Errorf("StepID(%q) = %q, want %q", name, got, want)
		}
		if !stepIDPattern.MatchString(got) {
			t.Errorf("StepID(%q) = %q is not a valid step id", name, got)
		}
	}
}
