package agent

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// golden compares got with testdata/golden/<name>, rewriting it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it)\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestPrompt(t *testing.T) {
	golden(t, "prompt-contract-retry.txt", Prompt(sampleRequest()))
	golden(t, "prompt-no-contract.txt", Prompt(Request{RunID: "run-9", StepID: "notes", Task: "  List open questions.\n", Attempt: 1}))
	empty := sampleRequest()
	empty.Contract = &Contract{Name: "Empty"}
	empty.PreviousFailure = nil
	golden(t, "prompt-empty-contract.txt", Prompt(empty))
}

func TestDescribeType(t *testing.T) {
	tests := []struct{ in, want string }{
		{"string", "string"},
		{"integer", "integer (a whole number)"},
		{"number?", "number, optional"},
		{"object", "any JSON object"},
		{"array", "any JSON array"},
		{"string[]", "array of string"},
		{"string[][]", "array of array of string"},
		{"(low|high)[]", `array of one of "low", "high"`},
		{"low|high", `one of "low", "high"`},
		{"a b|c-d?", `one of "a b", "c-d", optional`},
		{"Finding", "Finding object"},
		{"Finding[]?", "array of Finding object, optional"},
		{"?", "?"},
		{"string??", "string??"},
		{"date", "date"},
	}
	for _, tt := range tests {
		if got := DescribeType(tt.in); got != tt.want {
			t.Errorf("DescribeType(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
