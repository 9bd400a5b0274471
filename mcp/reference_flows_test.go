package mcp

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestStdioReferenceFlows drives the three flows of testdata/flows, written
// from the language reference (language.md) alone, through the built
// binary over stdio, the way a model does: validate (valid at the first
// call), plan, do and report every ready entry, fix what is rejected, and
// a gate decided as a person would, with stratum_gate_resolve.
func TestStdioReferenceFlows(t *testing.T) {
	home := t.TempDir()
	p := startServer(t, home)
	read := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("testdata", "flows", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	plan := func(spec string, input map[string]any) result {
		t.Helper()
		p.call("stratum_validate", map[string]any{"spec": spec}).mustStatus(t, "valid")
		return p.call("stratum_plan", map[string]any{"spec": spec, "input": input})
	}
	report := func(r result, e map[string]any, res map[string]any) result {
		t.Helper()
		return p.call("stratum_step_done", map[string]any{"runId": runID(t, r), "stepId": e["id"],
			"dispatchToken": e["dispatchToken"], "result": res})
	}
	workspace := func(run string) string {
		t.Helper()
		a := p.call("stratum_audit", map[string]any{"runId": run})
		ws, _ := a.Body["workspaceRoot"].(string)
		if ws == "" {
			t.Fatalf("no workspaceRoot in the audit:\n%s", a.Text)
		}
		return ws
	}
	writeFile := func(root, rel string) {
		t.Helper()
		path := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("package x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("implement-and-test", func(t *testing.T) {
		r := plan(read("implement-and-test.stratum.yaml"), map[string]any{"module": "calc", "bug": "the division by zero"}).mustStatus(t, "ready")
		run := runID(t, r)
		ws := workspace(run)
		// implement: reported before the test file exists, so the
		// interpolated file_exists fails and says where it looked.
		e := entry(t, r, "implement")
		if !strings.Contains(e["do"].(string), "calc/fix_test.go") {
			t.Errorf("the task is not rendered: %v", e["do"])
		}
		change := map[string]any{"files": []any{"calc/div.go", "calc/fix_test.go"}, "summary": "guard the divisor"}
		r = report(r, e, map[string]any{"output": change}).mustStatus(t, "ready")
		e = entry(t, r, "implement")
		reason := fmt.Sprint(e["previousFailure"].(map[string]any)["reason"])
		if e["attempt"].(float64) != 2 || !strings.Contains(reason, filepath.Join(ws, "calc", "fix_test.go")) || !strings.Contains(reason, ws) {
			t.Errorf("the rejection does not say which path it looked up under which root:\n%s", r.Text)
		}
		writeFile(ws, "calc/fix_test.go")
		r = report(r, e, map[string]any{"output": change}).mustStatus(t, "ready")
		// test: fails once, then passes.
		e = entry(t, r, "test")
		r = report(r, e, map[string]any{"output": map[string]any{"passed": false, "failures": 1, "log": "TestDiv: divide by zero"}}).mustStatus(t, "ready")
		e = entry(t, r, "test")
		if e["attempt"].(float64) != 2 || !strings.Contains(fmt.Sprint(e["previousFailure"]), "result.passed == true") {
			t.Errorf("the retry does not carry the failed ensure:\n%s", r.Text)
		}
		r = report(r, e, map[string]any{"output": map[string]any{"passed": true, "failures": 0, "log": "ok"}}).mustStatus(t, "completed")
		if out := r.Body["output"].(map[string]any); out["passed"] != true {
			t.Errorf("output: %v", out)
		}
	})

	t.Run("code-review", func(t *testing.T) {
		// An optional input the task text reads is passed as null (the
		// reference: an absent value fails the step).
		r := plan(read("code-review.stratum.yaml"), map[string]any{"branch": "feature/login", "focus": nil}).mustStatus(t, "ready")
		run := runID(t, r)
		review := func(r result, summary string) result {
			t.Helper()
			return report(r, entry(t, r, "review"), map[string]any{"output": map[string]any{
				"summary":  summary,
				"findings": []any{map[string]any{"file": "login.go", "line": 42, "severity": "high", "note": "the password is logged"}},
				"verdict":  "changes",
			}})
		}
		r = review(r, "one high finding").mustStatus(t, "running")
		// The model reads the gate with stratum_gates (token, digest, the
		// review under review with its task) and shows it to the person.
		gate := func(r result, summary string) (token, digest string) {
			t.Helper()
			w := r.Body["waiting"].([]any)
			if len(w) != 1 || w[0].(map[string]any)["kind"] != "gate" || w[0].(map[string]any)["stepId"] != "approval" {
				t.Fatalf("not waiting on the approval gate:\n%s", r.Text)
			}
			g := p.call("stratum_gates", map[string]any{"runId": run}).mustStatus(t, "ok")
			if !strings.Contains(g.Text, summary) || !strings.Contains(g.Text, "Review the changes of branch feature/login") {
				t.Errorf("stratum_gates does not show the review under review with its task:\n%s", g.Text)
			}
			return gateView(t, p.call, run, "approval")
		}
		// The person reads the review and asks for another pass.
		tok, digest := gate(r, "one high finding")
		r = p.call("stratum_gate_resolve", map[string]any{"runId": run, "stepId": "approval", "decision": "revise",
			"gateToken": tok, "digest": digest, "rationale": "also check the error paths", "resolvedBy": "human"}).mustStatus(t, "ready")
		// The re-issued review carries the person's words.
		e := entry(t, r, "review")
		if rev, _ := e["revision"].(map[string]any); rev["note"] != "also check the error paths" {
			t.Errorf("the re-issued entry does not carry the revise note:\n%s", r.Text)
		}
		r = review(r, "one high finding; the error paths are fine").mustStatus(t, "running")
		// A decision on the first round's digest is refused: the person did
		// not see this review.
		tok, newDigest := gate(r, "the error paths are fine")
		stale := p.call("stratum_gate_resolve", map[string]any{"runId": run, "stepId": "approval", "decision": "approve",
			"gateToken": tok, "digest": digest, "rationale": "approved unseen", "resolvedBy": "human"})
		if stale.errorCode() != "stale_token" || !strings.Contains(stale.Text, newDigest) {
			t.Errorf("a decision on content the person did not see was not refused with the current view:\n%s", stale.Text)
		}
		// Then approves what they saw.
		r = p.call("stratum_gate_resolve", map[string]any{"runId": run, "stepId": "approval", "decision": "approve",
			"gateToken": tok, "digest": newDigest, "rationale": "good enough to fix", "resolvedBy": "human"}).mustStatus(t, "completed")
		if out := r.Body["output"].(map[string]any); !strings.Contains(out["summary"].(string), "error paths") {
			t.Errorf("the output is not the revised review: %v", out)
		}
		a := p.call("stratum_audit", map[string]any{"runId": run}).mustStatus(t, "completed")
		if !strings.Contains(a.Text, "also check the error paths") {
			t.Errorf("the person's rationale is not in the audit")
		}
	})

	t.Run("fanout-files", func(t *testing.T) {
		files := []any{"src/a.go", "src/b.go", "src/c.go"}
		r := plan(read("fanout-files.stratum.yaml"), map[string]any{"files": files}).mustStatus(t, "ready")
		ws := workspace(runID(t, r))
		for _, f := range files {
			writeFile(ws, f.(string))
		}
		var seen []string
		// Each answer lists the entries it issued; earlier ones still
		// ready are counted in stillReady (the model keeps them).
		var queue []map[string]any
		for i := 0; r.status() == "ready"; i++ {
			if i > 10 {
				t.Fatalf("the fanout does not end:\n%s", r.Text)
			}
			for _, e := range r.Body["ready"].([]any) {
				queue = append(queue, e.(map[string]any))
			}
			e := queue[0]
			queue = queue[1:]
			id := e["id"].(string)
			seen = append(seen, id)
			if id == "summary" {
				r = report(r, e, map[string]any{"output": map[string]any{"text": "three files, one issue", "total": 1}})
				continue
			}
			item := e["item"].(string)
			if !strings.HasPrefix(id, "files/") || !strings.Contains(e["do"].(string), item) {
				t.Errorf("a fanout item entry: %v", e)
			}
			r = report(r, e, map[string]any{"output": map[string]any{"file": item, "issues": 0, "notes": "clean"}})
		}
		r.mustStatus(t, "completed")
		slices.Sort(seen)
		if want := []string{"files/0", "files/1", "files/2", "summary"}; !slices.Equal(seen, want) {
			t.Errorf("reported %v, want %v", seen, want)
		}
	})
}
