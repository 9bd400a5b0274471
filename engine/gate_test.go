package engine

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

func (h *harness) gateToken(runID, id string) string {
	h.t.Helper()
	st := h.stepState(runID, id)
	if st.Status != StepWaitingGate || st.GateToken == "" {
		h.t.Fatalf("gate %s is not waiting: %s", id, dump(st))
	}
	return st.GateToken
}

func (h *harness) resolve(runID, id string, decision Decision) *Response {
	h.t.Helper()
	r, err := h.e.ResolveGate(h.ctx, GateRequest{RunID: runID, StepID: id, Decision: decision, GateToken: h.gateToken(runID, id)})
	if err != nil {
		h.t.Fatalf("resolve %s %s: %v", id, decision, err)
	}
	return r
}

const goodWork = `{"result":"done","quality_score":0.9}`

func TestFullGateApprove(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(string(example(t, "full-gate.stratum.yaml")), map[string]any{"text": "t"})
	r = h.ok(r, "work", goodWork)
	wantStatus(t, r, StatusRunning)
	if !slices.Equal(r.Waiting, []Waiting{{StepID: "review", Kind: "gate"}}) {
		t.Fatalf("waiting %s", dump(r.Waiting))
	}
	if strings.Contains(dump(r), h.gateToken(r.RunID, "review")) {
		t.Fatal("a running response must never carry the gate token")
	}
	r = h.resolve(r.RunID, "review", DecisionApprove)
	wantStatus(t, r, StatusCompleted)
	if jsonOf(t, r.Output) != goodWork {
		t.Fatalf("output %s", jsonOf(t, r.Output))
	}
	types := h.eventTypes(r.RunID)
	if !slices.Contains(types, "gate_waiting(review)") || !slices.Contains(types, "gate_resolved(review)") {
		t.Fatalf("events %v", types)
	}
}

func TestFullGateReviseRoundsAndStaleToken(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(string(example(t, "full-gate.stratum.yaml")), map[string]any{"text": "t"})
	r = h.ok(r, "work", goodWork)
	old := h.gateToken(r.RunID, "review")
	r = h.resolve(r.RunID, "review", DecisionRevise)
	en := entry(t, r, "work")
	if en.Epoch != 1 || en.Attempt != 1 {
		t.Fatalf("revised work entry %s", dump(en))
	}
	// The old gate token is stale once the round is over, and a stale
	// decision changes nothing.
	_, err := h.e.ResolveGate(h.ctx, GateRequest{RunID: r.RunID, StepID: "review", Decision: DecisionApprove, GateToken: old})
	e := wantCode(t, err, ErrStaleToken)
	if e.State == nil || e.State.Status != StatusReady || e.Code() != CodeStaleToken {
		t.Fatalf("refusal %s", dump(e.State))
	}
	r = h.ok(r, "work", goodWork)
	tok2 := h.gateToken(r.RunID, "review")
	if tok2 == old {
		t.Fatal("a new round needs a new gate token")
	}
	r = h.resolve(r.RunID, "review", DecisionRevise) // round 2 (gate max_rounds 2)
	r = h.ok(r, "work", goodWork)
	a := h.audit(r.RunID)
	if a.Rounds != 2 || a.Steps["review"].Iterations != 2 {
		t.Fatalf("rounds %d, gate iterations %d", a.Rounds, a.Steps["review"].Iterations)
	}
	r = h.resolve(r.RunID, "review", DecisionRevise) // round 3: the gate allows 2
	wantFailure(t, r, StatusFailed, "gate revision rounds exhausted")
	types := h.eventTypes(r.RunID)
	n := 0
	for _, ty := range types {
		if ty == "step_reset(work)" {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("step_reset events %d in %v", n, types)
	}
}

func TestFullGateKill(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(string(example(t, "full-gate.stratum.yaml")), map[string]any{"text": "t"})
	r = h.ok(r, "work", goodWork)
	r = h.resolve(r.RunID, "review", DecisionKill)
	wantFailure(t, r, StatusFailed, "gate review killed flow")
}

func TestGateDecisionRefusals(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(string(example(t, "full-gate.stratum.yaml")), map[string]any{"text": "t"})
	_, err := h.e.ResolveGate(h.ctx, GateRequest{RunID: r.RunID, StepID: "review", Decision: "reject", GateToken: "x"})
	wantCode(t, err, ErrInvalidDecision)
	_, err = h.e.ResolveGate(h.ctx, GateRequest{RunID: r.RunID, StepID: "review", Decision: DecisionApprove, GateToken: "x"})
	wantCode(t, err, ErrNotAwaiting)
	r = h.ok(r, "work", goodWork)
	_, err = h.e.ResolveGate(h.ctx, GateRequest{RunID: r.RunID, StepID: "review", Decision: DecisionApprove})
	e := wantCode(t, err, ErrStaleToken)
	if !strings.Contains(e.Message, "missing gate token") {
		t.Fatalf("message %q", e.Message)
	}
	_, err = h.e.ResolveGate(h.ctx, GateRequest{RunID: r.RunID, StepID: "work", Decision: DecisionApprove, GateToken: "x"})
	wantCode(t, err, ErrNotAwaiting)
	_, err = h.e.ResolveGate(h.ctx, GateRequest{RunID: "00000000-0000-4000-8000-999999999999", StepID: "review", Decision: DecisionApprove, GateToken: "x"})
	wantCode(t, err, ErrRunNotFound)
}

// A gate with distinct approve and kill targets completes on either
// path; the gate's other successors continue after approve and are
// skipped after kill (DESIGN decision 10).
const gateRoutes = `
version: 1
contracts:
  R: {v: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${finish.output}", contract: R}
    steps:
      - id: build
        do: build
        out: R
      - id: review
        after: [build]
        gate: {on_approve: ship, on_revise: null, on_kill: cleanup}
      - id: ship
        do: ship
        out: R
      - id: notify
        after: [review]
        do: notify
        out: R
      - id: announce
        after: [notify]
        do: announce
        out: R
      - id: cleanup
        do: cleanup
        out: R
      - id: finish
        after: [ship, cleanup, announce]
        do: finish
        out: R
`

func TestGateRoutesDecision10(t *testing.T) {
	t.Run("approve", func(t *testing.T) {
		h := newHarness(t, Options{})
		r := h.plan(gateRoutes, map[string]any{})
		r = h.ok(r, "build", `{"v":"b"}`)
		r = h.resolve(r.RunID, "review", DecisionApprove)
		if ids := readyIDs(r); !slices.Equal(ids, []string{"ship", "notify"}) {
			t.Fatalf("ready %v", ids)
		}
		r = h.drive(r, script{"ship": {`{"v":"s"}`}, "notify": {`{"v":"n"}`}, "announce": {`{"v":"a"}`}, "finish": {`{"v":"f"}`}})
		wantStatus(t, r, StatusCompleted)
		if st := h.stepState(r.RunID, "cleanup"); st.Status != StepSkipped || !strings.Contains(st.Skip.Reason, "route target was never chosen") {
			t.Fatalf("cleanup %s", dump(st))
		}
	})
	t.Run("kill", func(t *testing.T) {
		h := newHarness(t, Options{})
		r := h.plan(gateRoutes, map[string]any{})
		r = h.ok(r, "build", `{"v":"b"}`)
		r = h.resolve(r.RunID, "review", DecisionKill)
		if ids := readyIDs(r); !slices.Equal(ids, []string{"cleanup"}) {
			t.Fatalf("ready %v: the gate's successors must never run on a kill", ids)
		}
		r = h.ok(r, "cleanup", `{"v":"c"}`)
		r = h.ok(r, "finish", `{"v":"f"}`)
		wantStatus(t, r, StatusCompleted)
		for _, id := range []string{"ship", "notify", "announce"} {
			if st := h.stepState(r.RunID, id); st.Status != StepSkipped {
				t.Fatalf("%s %s", id, dump(st))
			}
		}
		if st := h.stepState(r.RunID, "notify"); !strings.Contains(st.Skip.Reason, `gate "review" was killed`) {
			t.Fatalf("notify %s", dump(st))
		}
	})
}

// Gates in a subflow count rounds against the child flow's max_rounds.
const childGate = `
version: 1
contracts:
  R: {v: string}
flows:
  entry: main
  sub:
    input: {x: string}
    output: {from: "${draft.output}", contract: R}
    max_rounds: 1
    steps:
      - id: draft
        do: "draft ${input.x}"
        out: R
      - id: check
        after: [draft]
        gate: {on_approve: null, on_revise: draft, on_kill: null}
  main:
    input: {x: string}
    output: {from: "${wrap.output}", contract: R}
    steps:
      - id: wrap
        run: sub
        with: {x: "${input.x}"}
`

func TestSubflowGate(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(childGate, map[string]any{"x": "X"})
	r = h.ok(r, "wrap/draft", `{"v":"d1"}`)
	wantStatus(t, r, StatusRunning)
	if !slices.Equal(r.Waiting, []Waiting{{StepID: "wrap/check", Kind: "gate"}}) {
		t.Fatalf("waiting %s", dump(r.Waiting))
	}
	gates, err := h.e.ListGates(h.ctx, "")
	if err != nil || len(gates) != 1 || gates[0].StepID != "wrap/check" || gates[0].GateToken == "" {
		t.Fatalf("gates %s %v", dump(gates), err)
	}
	r = h.resolve(r.RunID, "wrap/check", DecisionRevise)
	en := entry(t, r, "wrap/draft")
	if en.Epoch != 1 {
		t.Fatalf("entry %s", dump(en))
	}
	r = h.ok(r, "wrap/draft", `{"v":"d2"}`)
	r = h.resolve(r.RunID, "wrap/check", DecisionRevise)
	wantFailure(t, r, StatusFailed, "gate revision rounds exhausted")
	if !strings.Contains(r.Failure.Reason, `subflow "sub"`) {
		t.Fatalf("failure %s", dump(r.Failure))
	}
}

// The decider's rationale and identity land in the gate_resolved event, and
// RunPlan describes the run's spec for front ends.
func TestGateRationaleRecordedAndRunPlan(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(string(example(t, "full-gate.stratum.yaml")), map[string]any{"text": "t"})
	r = h.ok(r, "work", goodWork)
	r, err := h.e.ResolveGate(h.ctx, GateRequest{RunID: r.RunID, StepID: "review", Decision: DecisionApprove,
		GateToken: h.gateToken(r.RunID, "review"), Rationale: "looks right", ResolvedBy: "human"})
	if err != nil {
		t.Fatal(err)
	}
	var detail string
	for _, ev := range h.audit(r.RunID).Events {
		if ev.Type == "gate_resolved" {
			detail = string(ev.Detail)
		}
	}
	if !strings.Contains(detail, `"rationale":"looks right"`) || !strings.Contains(detail, `"resolvedBy":"human"`) {
		t.Fatalf("gate_resolved detail %s", detail)
	}

	p, err := h.reopen(Options{}).RunPlan(h.ctx, r.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if s := p.EntryFlow().Step("review"); s == nil || s.Gate == nil {
		t.Fatalf("RunPlan lost the review gate: %+v", s)
	}
	if _, err := h.e.RunPlan(h.ctx, "no-such-run"); !errors.Is(err, ErrRunNotFound) {
		t.Fatalf("RunPlan of an unknown run: %v", err)
	}
}

// revise on a gate whose on_revise is null is refused with nothing changed
// (the reference fails the run as "rounds exhausted"); the same token then
// serves approve. The rule lives here so every front end gives this answer.
func TestReviseWithoutRouteRefused(t *testing.T) {
	const spec = `
version: 1
contracts:
  V: {v: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${work.output}", contract: V}
    steps:
      - {id: work, do: "w", out: V}
      - {id: check, after: [work], gate: {on_approve: null, on_revise: null, on_kill: null}}
`
	h := newHarness(t, Options{})
	r := h.plan(spec, map[string]any{})
	r = h.ok(r, "work", `{"v":"x"}`)
	tok := h.gateToken(r.RunID, "check")
	before := h.eventTypes(r.RunID)
	_, err := h.e.ResolveGate(h.ctx, GateRequest{RunID: r.RunID, StepID: "check", Decision: DecisionRevise, GateToken: tok})
	if !errors.Is(err, ErrNoReviseRoute) || CodeOf(err) != "missing_on_revise" {
		t.Fatalf("revise without a route: %v", err)
	}
	if after := h.eventTypes(r.RunID); !slices.Equal(before, after) {
		t.Fatalf("a refused revise changed the run: %v -> %v", before, after)
	}
	r, err = h.e.ResolveGate(h.ctx, GateRequest{RunID: r.RunID, StepID: "check", Decision: DecisionApprove, GateToken: tok})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, r, StatusCompleted)
}

// A revise carries the reviewer's words to the re-issued step: the note,
// who decided, the round and the output that was sent back.
func TestReviseCarriesTheNote(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(string(example(t, "full-gate.stratum.yaml")), map[string]any{"text": "t"})
	r = h.ok(r, "work", goodWork)
	gates, err := h.e.ListGates(h.ctx, r.RunID)
	if err != nil || len(gates) != 1 {
		t.Fatalf("gates %v %v", gates, err)
	}
	r, err = h.e.ResolveGate(h.ctx, GateRequest{RunID: r.RunID, StepID: "review", Decision: DecisionRevise, GateToken: gates[0].GateToken,
		Rationale: "Keep non-ASCII letters, add a test", ResolvedBy: "ada"})
	if err != nil {
		t.Fatal(err)
	}
	en := entry(t, r, "work")
	want := `{"gate":"review","round":1,"note":"Keep non-ASCII letters, add a test","resolvedBy":"ada","sentBack":` + goodWork + `}`
	if got := dump(en.Revision); got != want {
		t.Fatalf("revision %s\nwant %s", got, want)
	}
	// A retry in the same round still carries it, with the failure.
	r = h.ok(r, "work", `{"result":"r","quality_score":0.1}`)
	if en := entry(t, r, "work"); en.Revision == nil || en.PreviousFailure == nil {
		t.Fatalf("retry entry %s", dump(en))
	}
	// Accepted: the audit keeps it on the step.
	r = h.ok(r, "work", goodWork)
	if st := h.stepState(r.RunID, "work"); st.Revision == nil || st.Revision.Note != "Keep non-ASCII letters, add a test" {
		t.Fatalf("audit %s", dump(st))
	}
}

// A gate view shows what is under review (the rendered task and the
// output of each step the gate follows) and its digest; a decision made
// on other content, with an unknown token or an earlier round's token is
// refused with the current view.
func TestGateViewAndDigest(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(string(example(t, "full-gate.stratum.yaml")), map[string]any{"text": "t"})
	r = h.ok(r, "work", goodWork)
	views, err := h.e.GateViews(h.ctx, r.RunID)
	if err != nil || len(views) != 1 {
		t.Fatalf("views %v %v", views, err)
	}
	v := views[0]
	if len(v.UnderReview) != 1 || v.UnderReview[0].StepID != "work" || v.UnderReview[0].Task != "Produce the deliverable requested in t" ||
		dump(v.UnderReview[0].Output) != goodWork || v.Digest == "" || v.RevisesLeft != 2 || v.MaxRounds != 2 {
		t.Fatalf("view %s", dump(v))
	}
	decide := func(token, digest string) error {
		_, err := h.e.ResolveGate(h.ctx, GateRequest{RunID: r.RunID, StepID: "review", Decision: DecisionApprove, GateToken: token, Digest: digest})
		return err
	}
	for name, tc := range map[string]struct{ token, digest, want string }{
		"other content": {v.GateToken, strings.Repeat("0", 64), "is not what the decision was made on"},
		"unknown token": {"nope", "", "the gate token is unknown"},
	} {
		err := decide(tc.token, tc.digest)
		var ee *Error
		if !errors.As(err, &ee) || ee.Code() != CodeStaleToken || !strings.Contains(ee.Message, tc.want) || ee.Gate == nil || ee.Gate.GateToken != v.GateToken {
			t.Fatalf("%s: %v (gate %s)", name, err, dump(ee))
		}
	}
	// Revise, then the first round's token is an earlier round's.
	if _, err := h.e.ResolveGate(h.ctx, GateRequest{RunID: r.RunID, StepID: "review", Decision: DecisionRevise, GateToken: v.GateToken, Digest: v.Digest}); err != nil {
		t.Fatal(err)
	}
	st, _ := h.e.Status(h.ctx, r.RunID)
	h.ok(st, "work", `{"result":"better","quality_score":0.95}`)
	if err := decide(v.GateToken, ""); err == nil || !strings.Contains(err.Error(), "earlier round") {
		t.Fatalf("earlier round's token: %v", err)
	}
	views, _ = h.e.GateViews(h.ctx, r.RunID)
	if views[0].Digest == v.Digest || views[0].RevisesLeft != 1 {
		t.Fatalf("second round %s", dump(views[0]))
	}
	if err := decide(views[0].GateToken, views[0].Digest); err != nil {
		t.Fatal(err)
	}
	var d GateResolvedDetail
	for _, ev := range h.audit(r.RunID).Events {
		if ev.Type == EventGateResolved {
			_ = ev.DecodeDetail(&d)
		}
	}
	if d.Digest != views[0].Digest {
		t.Fatalf("gate_resolved digest %q, want %q", d.Digest, views[0].Digest)
	}
}

// An attempt's workspace changes (as a driver measured them) are kept with
// the attempt and their patch can be read back.
func TestAttemptChanges(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(twoSteps, map[string]any{"x": "X"})
	ch := &Changes{HeadBefore: "h1", HeadAfter: "h1", TreeBefore: "t1", TreeAfter: "t2", Stat: " a.txt | 1 +", Patch: []byte("diff --git a/a.txt b/a.txt\n")}
	r = h.report(r, "a", StepResult{Output: json.RawMessage(`{"v":"A"}`), Changes: ch})
	st := h.stepState(r.RunID, "a")
	if c := st.Attempts[0].Changes; c == nil || c.PatchBytes != len(ch.Patch) || c.TreeAfter != "t2" {
		t.Fatalf("changes %s", dump(st.Attempts[0]))
	}
	p, err := h.e.Patch(h.ctx, r.RunID, "a", -1, 0)
	if err != nil || string(p) != string(ch.Patch) {
		t.Fatalf("patch %q %v", p, err)
	}
}

// Attempt 0 is the last attempt: when it kept no patch, no patch is
// returned, whatever an earlier attempt kept; an omitted patch keeps its
// measured size.
func TestAttemptPatchPerAttempt(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.plan(twoSteps, map[string]any{"x": "X"})
	first := &Changes{TreeBefore: "t1", TreeAfter: "t2", Stat: " a.txt | 1 +", Patch: []byte("first patch\n")}
	r = h.report(r, "a", StepResult{Output: json.RawMessage(`{"v":1}`), Changes: first}) // contract failure: a retry
	second := &Changes{TreeBefore: "t2", TreeAfter: "t3", Stat: " big | 9 +", PatchBytes: 5 << 20, PatchOmitted: true}
	r = h.report(r, "a", StepResult{Output: json.RawMessage(`{"v":"A"}`), Changes: second})
	st := h.stepState(r.RunID, "a")
	if len(st.Attempts) != 2 || st.Attempts[1].Changes == nil || !st.Attempts[1].Changes.PatchOmitted || st.Attempts[1].Changes.PatchBytes != 5<<20 {
		t.Fatalf("attempts %s", dump(st.Attempts))
	}
	for _, tc := range []struct {
		attempt int
		want    string
	}{{0, ""}, {2, ""}, {1, "first patch\n"}, {3, ""}} {
		p, err := h.e.Patch(h.ctx, r.RunID, "a", -1, tc.attempt)
		if err != nil || string(p) != tc.want {
			t.Errorf("attempt %d: patch %q %v, want %q", tc.attempt, p, err, tc.want)
		}
	}
	if _, err := h.e.Patch(h.ctx, r.RunID, "nope", -1, 0); !errors.Is(err, ErrInvalidStep) {
		t.Errorf("unknown step: %v", err)
	}
}
