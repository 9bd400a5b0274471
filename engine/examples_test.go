package engine

import (
	"slices"
	"strings"
	"testing"
)

func TestExampleMinimal(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(string(example(t, "minimal.stratum.yaml")), map[string]any{"text": "I love it"})
	wantStatus(t, r, StatusReady)
	if len(r.RevisionDigest) != 64 {
		t.Fatalf("revisionDigest %q", r.RevisionDigest)
	}
	en := entry(t, r, "classify_text")
	if en.Do != "Classify the sentiment of I love it" || en.Agent != "claude" || en.Attempt != 1 || en.DispatchToken == "" {
		t.Fatalf("ready entry %s", dump(en))
	}
	if en.Contract == nil || en.Contract.Root != "SentimentResult" || en.Contract.Contracts["SentimentResult"]["confidence"] != "number" {
		t.Fatalf("contract %s", dump(en.Contract))
	}
	if r.Ledger.Spent.Dispatches != 1 {
		t.Fatalf("ledger %s: the ready step's dispatch is reserved", dump(r.Ledger))
	}
	// First attempt fails an ensure: a retry with failure context.
	r = h.ok(r, "classify_text", `{"label":"positive","confidence":0.5}`)
	wantStatus(t, r, StatusReady)
	en2 := entry(t, r, "classify_text")
	if en2.Attempt != 2 || en2.DispatchToken == en.DispatchToken || en2.PreviousFailure == nil ||
		!strings.Contains(en2.PreviousFailure.Reason, `ensure "result.confidence > 0.7" failed`) ||
		!strings.Contains(en2.PreviousFailure.Reason, `0.5`) {
		t.Fatalf("retry entry %s", dump(en2))
	}
	r = h.ok(r, "classify_text", `{"label":"positive","confidence":0.9}`)
	wantStatus(t, r, StatusCompleted)
	if got := jsonOf(t, r.Output); got != `{"label":"positive","confidence":0.9}` {
		t.Fatalf("output %s", got)
	}
	want := []string{"planned", "ready(classify_text)", "result(classify_text)", "ready(classify_text)", "result(classify_text)", "completed"}
	if got := h.eventTypes(r.RunID); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

func TestExampleCodeReviewAndQuickstart(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(string(example(t, "code-review.stratum.yaml")), map[string]any{"files": []any{"a.go", "b.go"}})
	if en := entry(t, r, "review"); en.Do != `Review ["a.go","b.go"] for security, logic, and performance` {
		t.Fatalf("do %q", en.Do)
	}
	r = h.ok(r, "review", `{"summary":"fine"}`)
	wantStatus(t, r, StatusCompleted)

	r = h.plan(string(example(t, "quickstart.stratum.yaml")), map[string]any{"topic": "notes"})
	r = h.ok(r, "outline", `{"title":"T","points":["a","b"]}`)
	if en := entry(t, r, "draft"); en.Do != `Write the note titled T from these points: ["a","b"]. Report the text, its word count and how confident you are that it covers every point (0 to 1).` {
		t.Fatalf("draft do %q", en.Do)
	}
	r = h.ok(r, "draft", `{"text":"hello","words":1,"confidence":0.95}`)
	wantStatus(t, r, StatusCompleted)
}

func TestExampleIterate(t *testing.T) {
	h := newHarness(t, Options{})
	spec := string(example(t, "iterate.stratum.yaml"))
	r := h.plan(spec, map[string]any{"brief": "b"})
	r = h.ok(r, "improve", `{"text":"v1","quality":0.5}`)
	en := entry(t, r, "improve")
	if en.Attempt != 2 || !strings.Contains(en.PreviousFailure.Reason, `iterate until "result.quality >= 0.95" failed`) {
		t.Fatalf("iterate entry %s", dump(en))
	}
	r = h.ok(r, "improve", `{"text":"v2","quality":0.97}`)
	wantStatus(t, r, StatusCompleted)
	st := h.stepState(r.RunID, "improve")
	if st.Iterations != 1 || len(st.Attempts) != 2 {
		t.Fatalf("improve state %s", dump(st))
	}
}

func TestIterateIdenticalEvidenceStops(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(string(example(t, "iterate.stratum.yaml")), map[string]any{"brief": "b"})
	r = h.ok(r, "improve", `{"text":"v1","quality":0.5}`)
	r = h.ok(r, "improve", `{"quality":0.5,"text":"v1"}`) // same evidence, other key order
	wantFailure(t, r, StatusFailed, "(no retry: identical evidence)")
}

func TestIterateExhaustion(t *testing.T) {
	h := newHarness(t, Options{})
	spec := strings.Replace(string(example(t, "iterate.stratum.yaml")), "max: 5", "max: 2", 1)
	r := h.plan(spec, map[string]any{"brief": "b"})
	r = h.ok(r, "improve", `{"text":"v1","quality":0.1}`)
	r = h.ok(r, "improve", `{"text":"v2","quality":0.2}`)
	wantFailure(t, r, StatusFailed, "iterate max 2 reached")
}

func TestExampleOnFailBothPaths(t *testing.T) {
	spec := string(example(t, "on-fail-routing.stratum.yaml"))
	t.Run("success", func(t *testing.T) {
		h := newHarness(t, Options{})
		r := h.plan(spec, map[string]any{"spec": "s"})
		r = h.drive(r, script{
			"generate": {`{"ok":true,"details":"gen"}`},
			"verify":   {`{"ok":true,"details":"verified"}`},
			"publish":  {`{"ok":true,"details":"published"}`},
		})
		wantStatus(t, r, StatusCompleted)
		if st := h.stepState(r.RunID, "recover"); st.Status != StepSkipped || !strings.Contains(st.Skip.Reason, "on_fail target was never routed") {
			t.Fatalf("recover %s", dump(st))
		}
	})
	t.Run("failure", func(t *testing.T) {
		h := newHarness(t, Options{})
		r := h.plan(spec, map[string]any{"spec": "s"})
		r = h.report(r, "generate", StepResult{Failure: "compiler crashed"})
		en := entry(t, r, "generate")
		if en.Attempt != 2 || en.PreviousFailure.Reason != "compiler crashed" {
			t.Fatalf("retry %s", dump(en))
		}
		r = h.report(r, "generate", StepResult{Failure: "compiler crashed again"})
		en = entry(t, r, "recover")
		if en.PreviousFailure == nil || en.PreviousFailure.Reason != "compiler crashed again" || en.PreviousFailure.Attempt != 2 {
			t.Fatalf("recover entry %s", dump(en))
		}
		r = h.ok(r, "recover", `{"ok":true,"details":"repaired"}`)
		r = h.ok(r, "publish", `{"ok":true,"details":"published"}`)
		wantStatus(t, r, StatusCompleted)
		st := h.stepState(r.RunID, "verify")
		if st.Status != StepSkipped || st.Skip.Source != "generate" || st.Skip.Target != "recover" ||
			!strings.Contains(st.Skip.Reason, `step "generate" failed`) {
			t.Fatalf("verify %s", dump(st))
		}
		types := h.eventTypes(r.RunID)
		if !slices.Contains(types, "routed(generate)") || !slices.Contains(types, "skipped(verify)") {
			t.Fatalf("events %v", types)
		}
	})
	t.Run("when false", func(t *testing.T) {
		h := newHarness(t, Options{})
		r := h.plan(spec, map[string]any{"spec": "s"})
		r = h.ok(r, "generate", `{"ok":false,"details":"partial"}`)
		// verify is skipped by its condition; recover never routed; publish
		// runs after both skips.
		r = h.ok(r, "publish", `{"ok":true,"details":"published"}`)
		wantStatus(t, r, StatusCompleted)
		if st := h.stepState(r.RunID, "verify"); !strings.Contains(st.Skip.Reason, "evaluated to false") {
			t.Fatalf("verify %s", dump(st))
		}
	})
}

func TestExampleFlowComposition(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(string(example(t, "flow-composition.stratum.yaml")), map[string]any{"project": "p"})
	en := entry(t, r, "test/run_tests")
	if en.Do != "Run integration tests for p" {
		t.Fatalf("child do %q", en.Do)
	}
	r = h.ok(r, "test/run_tests", `{"all_passed":true}`)
	if en := entry(t, r, "release"); en.Do != "Deploy after test result true" {
		t.Fatalf("release do %q", en.Do)
	}
	r = h.ok(r, "release", `{"status":"deployed"}`)
	wantStatus(t, r, StatusCompleted)
	want := []string{"planned", "ready(test/run_tests)", "result(test/run_tests)", "result(test)", "ready(release)", "result(release)", "completed"}
	if got := h.eventTypes(r.RunID); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if st := h.stepState(r.RunID, "test"); jsonOf(t, st.Output.Data) != `{"all_passed":true}` {
		t.Fatalf("run step output %s", dump(st))
	}
}

// Iterate exhaustion is a forced failure that takes the on_fail route.
func TestIterateExhaustionIntoOnFail(t *testing.T) {
	h := newHarness(t, Options{})
	spec := strings.Replace(string(example(t, "iterate.stratum.yaml")), "max: 5", "max: 2", 1)
	spec = strings.Replace(spec, `          until: "result.quality >= 0.95"`, `          until: "result.quality >= 0.95"
        on_fail: settle
      - id: settle
        do: "Accept the best draft"
        out: Draft`, 1)
	spec = strings.Replace(spec, `from: "${improve.output}"`, `from: "${settle.output}"`, 1)
	r := h.plan(spec, map[string]any{"brief": "b"})
	r = h.ok(r, "improve", `{"text":"v1","quality":0.1}`)
	r = h.ok(r, "improve", `{"text":"v2","quality":0.2}`)
	en := entry(t, r, "settle")
	if en.PreviousFailure == nil || !strings.Contains(en.PreviousFailure.Reason, "iterate max 2 reached") {
		t.Fatalf("settle %s", dump(en))
	}
	r = h.ok(r, "settle", `{"text":"v2","quality":0.2}`)
	wantStatus(t, r, StatusCompleted)
}
