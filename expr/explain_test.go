package expr

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// A failed file predicate says which path it looked up under which root
// (a path taken literally, such as "${input.module}", shows as such).
func TestEvalPredicateTrace(t *testing.T) {
	root, _ := workspace(t)
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		expr    string
		holds   bool
		code    Code
		explain string // with R for the root and RR for the real root
	}{
		{`file_exists("${input.module}")`, false, "",
			`file_exists("${input.module}") looked up R/${input.module} in workspace root R: found nothing (the path or text contains "${", which file predicates do not interpolate: it was used literally)`},
		{`file_contains("f.txt", "xyz")`, false, "",
			`file_contains("f.txt", "xyz") looked up RR/f.txt in workspace root R: found a regular file of 11 bytes that does not contain the text`},
		{`file_exists("dir")`, false, "",
			`file_exists("dir") looked up RR/dir in workspace root R: found a directory`},
		{`file_exists("link_in") && file_exists("sub/none.txt")`, false, "",
			`file_exists("link_in") looked up RR/f.txt in workspace root R: found a regular file; file_exists("sub/none.txt") looked up R/sub/none.txt in workspace root R: found nothing`},
		{`file_exists("../outside/secret.txt")`, false, CodeValidation,
			`file_exists("../outside/secret.txt") in workspace root R: refused: validation_error: file path "../outside/secret.txt" escapes the workspace root`},
		{`file_contains("link_out", "s")`, false, CodeValidation,
			`file_contains("link_out", "s") looked up R/link_out in workspace root R: refused: validation_error: file path "link_out" resolves outside the workspace root`},
		{`file_contains("f.txt", "world")`, true, "",
			`file_contains("f.txt", "world") looked up RR/f.txt in workspace root R: found the text`},
		{`len(result) > 0`, true, "", ``},
	}
	b := Bindings{Result: Bind("x")}
	for _, tt := range tests {
		p, err := Compile(tt.expr)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := p.EvalPredicateTrace(t0ctx, b, &EvalOptions{WorkspaceRoot: root})
		var e *Error
		switch {
		case tt.code == "" && err != nil:
			t.Errorf("%s: %v", tt.expr, err)
		case tt.code != "" && (!errors.As(err, &e) || e.Code != tt.code):
			t.Errorf("%s: %v, want %s", tt.expr, err, tt.code)
		}
		if tr.Holds != tt.holds {
			t.Errorf("%s: holds %v, want %v", tt.expr, tr.Holds, tt.holds)
		}
		want := strings.NewReplacer("RR", realRoot, "R", root).Replace(tt.explain)
		if got := tr.Explain(); got != want {
			t.Errorf("%s:\n got %s\nwant %s", tt.expr, got, want)
		}
	}
}

func TestTraceKeepsAtMostMaxFileChecks(t *testing.T) {
	root, _ := workspace(t)
	src := strings.TrimSuffix(strings.Repeat("file_exists('missing.txt') || ", MaxFileChecks+4), " || ")
	p, err := Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := p.EvalPredicateTrace(t0ctx, Bindings{}, &EvalOptions{WorkspaceRoot: root})
	if err != nil || tr.Holds || len(tr.Files) != MaxFileChecks || tr.More != 4 {
		t.Fatalf("holds %v, %d checks, %d more, %v", tr.Holds, len(tr.Files), tr.More, err)
	}
	if !strings.HasSuffix(tr.Explain(), "; and 4 more file checks") {
		t.Errorf("Explain() = ...%s", tr.Explain()[len(tr.Explain())-60:])
	}
}

// Tracing costs nothing for an expression that calls no file function.
func TestEvalPredicateTraceAllocations(t *testing.T) {
	p, err := Compile(typicalEnsure)
	if err != nil {
		t.Fatal(err)
	}
	b := benchBindings()
	allocs := testing.AllocsPerRun(100, func() {
		if tr, err := p.EvalPredicateTrace(t0ctx, b, nil); err != nil || !tr.Holds {
			t.Fatalf("%v, %v", tr, err)
		}
	})
	if allocs != 0 {
		t.Errorf("EvalPredicateTrace allocates %v times per run", allocs)
	}
}
