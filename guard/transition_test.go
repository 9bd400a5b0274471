package guard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofrs/flock"

	"github.com/stratum-go/stratum/guard/internal/canon"
	"github.com/stratum-go/stratum/guard/internal/ledger"
	"github.com/stratum-go/stratum/judge"
)

func TestTransitionAppliedAndRefused(t *testing.T) {
	f := newFixture(t)
	id := "compose:FEAT-1"
	f.register(f.featureRequest(id))

	// plan.md missing: refused, recorded, state unchanged.
	res := f.mustTransition(id, "draft", "review", withArtifacts(map[string]any{"plan": "plan.md"}))
	if res.Status != "refused" || res.CurrentState != "draft" || res.LedgerRef == "" || res.LedgerRef != res.EntryDigest || res.PrevDigest != "" {
		t.Fatalf("refused = %+v", res)
	}
	v := res.Verdict
	if v["met"] != false || v["clean"] != false || v["summary"] != summaryEvidence || v["stakes"] != "paranoid" || v["judge_version"] != "1.0" {
		t.Fatalf("verdict %+v", v)
	}
	preds := v["predicates"].([]any)
	p0 := preds[0].(map[string]any)
	if len(preds) != 1 || p0["id"] != "plan" || p0["verdict"] != "not_met" || p0["confidence"] != int64(10) || p0["type"] != "deterministic" {
		t.Fatalf("predicates %+v", preds)
	}
	ev := v["meta"].(map[string]any)["guard_evidence"].([]any)[0].(map[string]any)
	if ev["evidence"] != "plan.md missing" || ev["met"] != false || ev["id"] != "plan" {
		t.Fatalf("evidence %+v", ev)
	}

	// The artifacts claim nothing: only the real file counts.
	f.write("plan.md", "# plan\n")
	res2 := f.mustTransition(id, "draft", "review")
	if res2.Status != "applied" || res2.CurrentState != "review" || res2.PrevDigest != res.EntryDigest {
		t.Fatalf("applied = %+v", res2)
	}
	// A pinned policy checksum.
	_, err := f.transition(id, "review", "done", func(r *TransitionRequest) { r.ExpectedPolicyChecksum = strings.Repeat("0", 64) })
	wantCode(t, err, CodePolicyChecksumMismatch, strings.Repeat("0", 64))
	_, err = f.transition(id, "review", "done", func(r *TransitionRequest) { r.ExpectedPolicyChecksum = "ABC" })
	wantCode(t, err, CodeInvalidArgument, "expected_policy_checksum")
	pinned := f.mustTransition(id, "review", "draft", func(r *TransitionRequest) { r.ExpectedPolicyChecksum = mustLoad(t, f, id).Checksum })
	if pinned.Status != "applied" {
		t.Fatal(pinned.Status)
	}
	f.mustTransition(id, "draft", "review")
	// Stale and illegal.
	_, err = f.transition(id, "draft", "review")
	wantCode(t, err, CodeStaleFromState, `"review"`)
	_, err = f.transition(id, "review", "nowhere")
	wantCode(t, err, CodeIllegalEdge, "review->nowhere")
	_, err = f.transition(id, "review", "done", func(r *TransitionRequest) { r.ResolvedBy = "system" })
	wantCode(t, err, CodeEvidenceParseError, "resolved_by")
	_, err = f.transition(id, "review", "done", withArtifacts(nil))
	wantCode(t, err, CodeInvalidArgument, "artifacts")
	_, err = f.transition(id, "review", "done", withArtifacts(map[string]any{"score": 0.5}))
	wantCode(t, err, CodeInvalidArgument, "canonical")

	// review->done needs "approved" in plan.md (an unnamed predicate: id e0).
	res3 := f.mustTransition(id, "review", "done")
	if res3.Status != "refused" || res3.Verdict["predicates"].([]any)[0].(map[string]any)["id"] != "e0" || res3.Verdict["stakes"] != "default" {
		t.Fatalf("%+v", res3)
	}
	f.write("plan.md", "# plan\napproved\n")
	res4 := f.mustTransition(id, "review", "done", func(r *TransitionRequest) { r.ResolvedBy = "human" })
	if res4.Status != "applied" || res4.CurrentState != "done" {
		t.Fatalf("%+v", res4)
	}

	h := f.history(id)
	if h.CurrentState != "done" || h.GraphVersion != 1 || len(h.Ledger) != 6 {
		t.Fatalf("history %+v", h)
	}
	wantOutcomes := []string{"refused", "applied", "applied", "applied", "refused", "applied"}
	for i, e := range h.Ledger {
		if e.Outcome != wantOutcomes[i] || e.Kind != "transition" || e.PayloadDigestVersion != 2 || e.PayloadDigest == nil {
			t.Fatalf("entry %d: %+v", i, e)
		}
	}
	if v, ok := h.Ledger[1].Verdict.(map[string]any); !ok || v["met"] != true || v["stakes"] != "paranoid" {
		t.Fatalf("history verdict %#v", h.Ledger[1].Verdict)
	}
	if h.Ledger[5].ResolvedBy != "human" || h.Ledger[0].ResolvedBy != "agent" {
		t.Fatal("resolved_by not recorded")
	}
	// The registry cache follows.
	reg, _ := os.ReadFile(filepath.Join(f.dir(id), registryFile))
	if !strings.Contains(string(reg), `"current_state": "done"`) {
		t.Fatalf("registry cache: %s", reg)
	}
	vr, err := f.verify(id)
	if err != nil || vr.Entries != 6 || vr.CurrentState != "done" || vr.LedgerHead != res4.EntryDigest || !vr.Sealed || len(vr.Warnings) != 0 {
		t.Fatalf("verify %+v %v", vr, err)
	}
}

func TestIdempotency(t *testing.T) {
	f := newFixture(t)
	id := "idem"
	f.register(f.featureRequest(id))
	art := withArtifacts(map[string]any{"pr": "https://example/1", "n": 3})

	// A refusal records its key and replays.
	r1 := f.mustTransition(id, "draft", "review", withKey("k1"), art)
	if r1.Status != "refused" {
		t.Fatal(r1.Status)
	}
	f.write("plan.md", "x") // the predicate would now hold...
	r2 := f.mustTransition(id, "draft", "review", withKey("k1"), art)
	if r2.Status != "replayed" || r2.LedgerRef != r1.LedgerRef || r2.Verdict["met"] != false || r2.PayloadDigest != r1.PayloadDigest || r2.CurrentState != "draft" {
		t.Fatalf("replay of a refusal = %+v", r2)
	}
	// ...but only a new key re-evaluates.
	r3 := f.mustTransition(id, "draft", "review", withKey("k2"), art)
	if r3.Status != "applied" {
		t.Fatal(r3.Status)
	}
	// Replay is checked before staleness: the retried request that moved
	// the state replays cleanly.
	r4 := f.mustTransition(id, "draft", "review", withKey("k2"), art)
	if r4.Status != "replayed" || r4.CurrentState != "review" || r4.EntryDigest != r3.EntryDigest || r4.PrevDigest != r3.PrevDigest {
		t.Fatalf("replay after move = %+v", r4)
	}
	// Same key, different payload (artifacts, modified files, resolved_by).
	for _, mod := range []func(*TransitionRequest){
		withArtifacts(map[string]any{"pr": "https://example/2"}),
		func(r *TransitionRequest) { r.ModifiedFiles = []string{"a.go"} },
		func(r *TransitionRequest) { r.ResolvedBy = "human" },
		func(r *TransitionRequest) { r.ToState = "done" },
	} {
		_, err := f.transition(id, "draft", "review", withKey("k2"), art, mod)
		wantCode(t, err, CodeIdempotencyConflict, `"k2"`)
	}
	// modified_files order does not matter.
	r5 := f.mustTransition(id, "review", "draft", withKey("k3"), func(r *TransitionRequest) { r.ModifiedFiles = []string{"b", "a", "é"} })
	r6 := f.mustTransition(id, "review", "draft", withKey("k3"), func(r *TransitionRequest) { r.ModifiedFiles = []string{"é", "a", "b"} })
	if r5.Status != "applied" || r6.Status != "replayed" {
		t.Fatalf("%s %s", r5.Status, r6.Status)
	}
	// Without a key the same request can be attempted again.
	f.mustTransition(id, "draft", "review")
	f.mustTransition(id, "review", "draft")
	if n := len(f.history(id).Ledger); n != 5 {
		t.Fatalf("%d entries; replays must write nothing", n)
	}
	// Legacy (version 1) entries replay with their own digest version.
	dir := f.dir(id)
	r := mustLoad(t, f, id)
	tp := &transitionPayload{from: "draft", to: "review", artifacts: map[string]any{}, modifiedFiles: []string{}, resolvedBy: "agent"}
	d1, _ := tp.digest(1, "")
	key := "legacy"
	h, err := f.g.lock(context.Background(), id, dir)
	if err != nil {
		t.Fatal(err)
	}
	e := &ledger.Entry{FromState: "draft", ToState: "review", Outcome: "refused", Kind: "transition", ResolvedBy: "agent",
		IdempotencyKey: &key, PayloadDigest: &d1}
	if _, err := f.g.commit(h, dir, r, e, nil); err != nil {
		t.Fatal(err)
	}
	h.unlock()
	r7 := f.mustTransition(id, "draft", "review", withKey("legacy"))
	if r7.Status != "replayed" || r7.Verdict["summary"] != summaryReplayed || r7.Verdict["met"] != false {
		t.Fatalf("legacy replay %+v", r7)
	}
	// A policy change makes the same key a conflict (v2 digests bind the
	// checksum): upgrade with a new state.
	up := f.featureRequest(id)
	up.Graph = obj(t, `{"draft":["review","parked"],"review":["done","draft"],"done":[],"parked":[]}`)
	if _, err := f.g.Upgrade(context.Background(), UpgradeRequest{ResourceID: id, NewGraph: up.Graph, NewEdgePredicates: up.EdgePredicates, NewTerminal: up.Terminal, NewStakes: up.Stakes, Rationale: "park"}); err != nil {
		t.Fatal(err)
	}
	_, err = f.transition(id, "draft", "review", withKey("k1"), art)
	wantCode(t, err, CodeIdempotencyConflict)
}

func mustLoad(t *testing.T, f *fixture, id string) *registry {
	t.Helper()
	r, err := f.g.load(id, f.dir(id))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestReceipts(t *testing.T) {
	f := newFixture(t)
	f.register(RegisterRequest{ResourceID: "own", Graph: obj(t, `{"a":["a","b"]}`), Initial: "a", EdgePredicates: obj(t, `{}`)})
	applied := f.mustTransition("own", "a", "a")
	f.register(RegisterRequest{ResourceID: "other", Graph: obj(t, `{"x":["y"]}`), Initial: "x",
		EdgePredicates: obj(t, `{"x->y":[{"statement":"verdict_receipt_clean('`+applied.EntryDigest+`')"}]}`)})
	// Receipts are per resource: another resource's applied entry does not count.
	if r := f.mustTransition("other", "x", "y"); r.Status != "refused" {
		t.Fatal("a receipt from another resource counted")
	}
	refused := f.mustTransition("other", "x", "y")
	r := mustLoad(t, f, "own")
	evidenceOf := func(digest string) (bool, string) {
		snap := &edgeSnapshot{resourceID: "own", edge: "a->b", stake: "default", log: r.Log,
			predicates: []map[string]any{{"statement": "verdict_receipt_clean('" + digest + "')"}}}
		met, v := f.g.evaluate(context.Background(), snap)
		return met, v["meta"].(map[string]any)["guard_evidence"].([]any)[0].(map[string]any)["evidence"].(string)
	}
	if met, ev := evidenceOf(applied.EntryDigest); !met || !strings.Contains(ev, "found (clean)") {
		t.Fatalf("own applied receipt: %v %s", met, ev)
	}
	ro := mustLoad(t, f, "other")
	snap := &edgeSnapshot{resourceID: "other", edge: "x->y", stake: "default", log: ro.Log,
		predicates: []map[string]any{{"statement": "verdict_receipt_clean('" + refused.EntryDigest + "')"}}}
	if met, _ := f.g.evaluate(context.Background(), snap); met {
		t.Fatal("a refused entry counted as a clean receipt")
	}
	if met, _ := evidenceOf(applied.EntryDigest[:63]); met {
		t.Fatal("a digest prefix counted")
	}
}

// TestLLMTier: verified/judged predicates go to the judge; without one
// the transition is refused, never applied.
func TestLLMTier(t *testing.T) {
	f := newFixture(t)
	ws := f.ws
	req := RegisterRequest{
		ResourceID: "llm", Graph: obj(t, `{"a":["b"],"b":["a"]}`), Initial: "a", WorkspaceRoot: &ws,
		EdgePredicates: obj(t, `{"a->b":[{"statement":"server_file_exists('spec.md')"},{"id":"quality","type":"verified","statement":"the spec is complete"},
			{"type":"judged","statement":"tests cover the change"}],"b->a":[{"type":"judged","statement":"rollback is justified"}]}`),
		Stakes: obj(t, `{"a->b":"paranoid"}`),
	}
	f.register(req)

	// Trusted evidence fails: the judge is not consulted at all.
	calls := filepath.Join(t.TempDir(), "calls")
	judgeScript := filepath.Join(t.TempDir(), "judge.sh")
	os.WriteFile(judgeScript, []byte(`#!/bin/sh
req=$(cat)
echo "$req" >> '`+calls+`'
case "$req" in
  *"tests cover"*) printf '{"holds": false, "reason": "no tests for edge cases", "model": "fake", "usage": {"tokens": 7}}' ;;
  *) printf '{"holds": true, "reason": "complete", "model": "fake", "usage": {"tokens": 5}}' ;;
esac
`), 0o755)
	f.g = f.newGuard(&judge.CommandJudge{Command: judgeScript})
	res := f.mustTransition("llm", "a", "b")
	if res.Status != "refused" {
		t.Fatal(res.Status)
	}
	if _, err := os.Stat(calls); !os.IsNotExist(err) {
		t.Fatal("the judge was called although trusted evidence failed")
	}
	preds := res.Verdict["predicates"].([]any)
	if len(preds) != 3 || preds[1].(map[string]any)["id"] != "quality" || preds[2].(map[string]any)["id"] != "j1" || preds[2].(map[string]any)["confidence"] != int64(0) {
		t.Fatalf("predicates %+v", preds)
	}

	// Trusted evidence holds; one judged predicate fails.
	f.write("spec.md", "spec")
	res = f.mustTransition("llm", "a", "b", withArtifacts(map[string]any{"summary": "did it"}), func(r *TransitionRequest) { r.ModifiedFiles = []string{"x.go"} })
	if res.Status != "refused" || res.Verdict["summary"] != "complete; no tests for edge cases" {
		t.Fatalf("%+v", res.Verdict)
	}
	meta := res.Verdict["meta"].(map[string]any)
	jr := meta["judge_results"].([]any)
	if meta["source"] != "judge" || len(jr) != 2 || jr[1].(map[string]any)["usage"].(map[string]any)["tokens"] != int64(7) || jr[0].(map[string]any)["stakes"] != "paranoid" {
		t.Fatalf("meta %+v", meta)
	}
	if res.Verdict["budget_consumed"].(map[string]any)["turns"] != int64(2) {
		t.Fatalf("budget %+v", res.Verdict["budget_consumed"])
	}
	sent, _ := os.ReadFile(calls)
	if !strings.Contains(string(sent), `"criterion":"the spec is complete"`) || !strings.Contains(string(sent), `"stakes":"paranoid"`) ||
		!strings.Contains(string(sent), `"artifacts":{"summary":"did it"}`) || !strings.Contains(string(sent), `"edge":"a->b"`) || !strings.Contains(string(sent), `"modified_files":["x.go"]`) {
		t.Fatalf("judge requests:\n%s", sent)
	}

	// Both hold: applied. (Make the judge hold everything.)
	os.WriteFile(judgeScript, []byte("#!/bin/sh\ncat >/dev/null\nprintf '{\"holds\": true, \"reason\": \"ok\"}'\n"), 0o755)
	res = f.mustTransition("llm", "a", "b")
	if res.Status != "applied" || res.Verdict["met"] != true {
		t.Fatalf("%+v", res)
	}

	// No judge configured: refused with the documented summary.
	f.g = f.newGuard(nil)
	res = f.mustTransition("llm", "b", "a")
	if res.Status != "refused" || res.Verdict["summary"] != summaryNoVerifier || res.CurrentState != "b" {
		t.Fatalf("no judge: %+v", res)
	}
	// A failing judge refuses too.
	f.g = f.newGuard(&judge.CommandJudge{Command: "exit 3"})
	res = f.mustTransition("llm", "b", "a")
	if res.Status != "refused" || !strings.Contains(res.Verdict["summary"].(string), "judge failed") {
		t.Fatalf("failing judge: %+v", res.Verdict)
	}
}

// TestCommandEvidenceEnv: command predicates obey the server opt-in at
// evaluation time and the timeout variable.
func TestCommandEvidenceEnv(t *testing.T) {
	f := newFixture(t)
	f.env[EnvAllowCommands] = "1"
	ws := f.ws
	f.register(RegisterRequest{ResourceID: "cmd", Graph: obj(t, `{"a":["b"],"b":["a"]}`), Initial: "a", WorkspaceRoot: &ws,
		EdgePredicates: obj(t, `{"a->b":[{"statement":"command_exit_zero(['sh','-c','test -f built'])"}],"b->a":[{"statement":"command_exit_zero(['sleep','30'])"}]}`)})
	if r := f.mustTransition("cmd", "a", "b"); r.Status != "refused" {
		t.Fatal(r.Status)
	}
	f.write("built", "")
	delete(f.env, EnvAllowCommands)
	r := f.mustTransition("cmd", "a", "b")
	if r.Status != "refused" || !strings.Contains(r.Verdict["meta"].(map[string]any)["guard_evidence"].([]any)[0].(map[string]any)["evidence"].(string), "disabled") {
		t.Fatalf("%+v", r.Verdict)
	}
	f.env[EnvAllowCommands] = "1"
	if r := f.mustTransition("cmd", "a", "b"); r.Status != "applied" {
		t.Fatal(r.Status)
	}
	f.env[EnvCommandTimeout] = "1"
	r = f.mustTransition("cmd", "b", "a")
	if r.Status != "refused" || !strings.Contains(r.Verdict["meta"].(map[string]any)["guard_evidence"].([]any)[0].(map[string]any)["evidence"].(string), "timed out after 1s") {
		t.Fatalf("%+v", r.Verdict)
	}
}

func TestCommandTimeoutParse(t *testing.T) {
	f := newFixture(t)
	for v, want := range map[string]string{"": "2m0s", "abc": "2m0s", "0": "2m0s", "-5": "2m0s", "7": "7s", " 9 ": "9s", "1.5": "2m0s"} {
		f.env[EnvCommandTimeout] = v
		if got := f.g.commandTimeout().String(); got != want {
			t.Errorf("%q -> %s, want %s", v, got, want)
		}
	}
}

// TestTornTailRepairedBeforeAppend: a write that dies half way through
// its ledger line (a crash: the fault seam writes half the line and ends
// the goroutine, as a SIGKILL would end the process, releasing the lock)
// leaves a torn last line of the write registry.json names as pending. It
// is dropped on read, is a warning for verify, and is truncated (kept
// aside) before the next append, so it never turns into interior damage.
// The same incomplete line with no write in progress is tampering.
func TestTornTailRepairedBeforeAppend(t *testing.T) {
	f := newFixture(t)
	f.register(f.featureRequest("torn"))
	f.write("plan.md", "")
	f.mustTransition("torn", "draft", "review")
	path := filepath.Join(f.dir("torn"), ledgerFile)
	good := f.ledgerBytes("torn")
	f.crashDuringLedgerWrite(func() { f.transition("torn", "review", "draft") })
	torn := f.ledgerBytes("torn")
	if len(torn) <= len(good) || torn[len(torn)-1] == '\n' {
		t.Fatalf("the crash left no torn line:\n%s", torn)
	}
	if h := f.history("torn"); len(h.Ledger) != 1 || h.CurrentState != "review" {
		t.Fatalf("history with a torn tail: %+v", h)
	}
	vr, err := f.verify("torn")
	if err != nil || vr.Entries != 1 || len(vr.Warnings) != 1 || !strings.Contains(vr.Warnings[0], "interrupted") {
		t.Fatalf("verify with the torn line of an interrupted write: %+v %v", vr, err)
	}
	f.mustTransition("torn", "review", "draft")
	after := f.ledgerBytes("torn")
	if !strings.HasPrefix(string(after), string(good)) || strings.Contains(string(after), string(torn[len(good):])) {
		t.Fatalf("torn tail not truncated:\n%s", after)
	}
	if vr, err := f.verify("torn"); err != nil || vr.Entries != 2 || len(vr.Warnings) != 0 {
		t.Fatalf("verify after repair: %+v %v", vr, err)
	}
	kept, _ := filepath.Glob(filepath.Join(f.dir("torn"), "ledger.torn-*"))
	if len(kept) != 1 {
		t.Fatalf("torn tail not kept aside: %v", kept)
	}
	// An incomplete line that no write explains: tampering.
	os.WriteFile(path, append(append([]byte{}, after...), []byte(`{"entry_digest":"abc`)...), 0o600)
	_, err = f.verify("torn")
	wantCode(t, err, CodeLedgerCorrupt, "no write was in progress")
	_, err = f.transition("torn", "draft", "review")
	wantCode(t, err, CodeLedgerCorrupt, "no write was in progress")
	// Interior damage: ledger_corrupt everywhere it is read.
	lines := strings.SplitAfter(string(after), "\n")
	damaged := strings.Replace(lines[0], `"draft"`, `"DRAFT"`, 1) + strings.Join(lines[1:], "")
	os.WriteFile(path, []byte(damaged), 0o600)
	_, err = f.transition("torn", "draft", "review")
	wantCode(t, err, CodeLedgerCorrupt, "line 1")
	_, err = f.g.History(context.Background(), HistoryRequest{ResourceID: "torn"})
	wantCode(t, err, CodeLedgerCorrupt)
}

// hookJudge is a judge whose verdict always holds and which, on each of
// its first calls, first runs the next hook: a concurrent mutation landing
// while the transition evaluates with no lock held.
type hookJudge struct {
	mu    sync.Mutex
	hooks []func()
}

func (j *hookJudge) Judge(ctx context.Context, req judge.Request) (judge.Verdict, error) {
	j.mu.Lock()
	var hook func()
	if len(j.hooks) > 0 {
		hook, j.hooks = j.hooks[0], j.hooks[1:]
	}
	j.mu.Unlock()
	if hook != nil {
		hook()
	}
	return judge.Verdict{Holds: true, Reason: "ok"}, nil
}

// TestOptimisticCommit: phase 3 re-validates under the lock what phase 1
// checked, against whatever committed while the predicates were being
// evaluated (docs/guard.md, "Transitions, idempotency, concurrency"), and
// writes nothing when the attempt no longer holds.
func TestOptimisticCommit(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	alice := newKey(t, "alice", "ed25519")
	graph := `{"a":["b","c"],"b":["a"],"c":["a"]}`
	preds := `{"a->b":[{"type":"judged","statement":"b is ready"}]}`
	register := func(id string) {
		f.register(RegisterRequest{ResourceID: id, Graph: obj(t, graph), EdgePredicates: obj(t, preds), Initial: "a"})
	}
	hj := &hookJudge{}
	f.g = f.newGuard(hj)
	f.g.setTrust([]byte(alice.allowed("alice")))
	entries := func(id string) int { return len(f.history(id).Ledger) }

	// The state moved: stale_from_state, and only the other move recorded.
	register("moved")
	hj.hooks = []func(){func() { f.mustTransition("moved", "a", "c") }}
	_, err := f.transition("moved", "a", "b")
	wantCode(t, err, CodeStaleFromState, "during evaluation")
	if n := entries("moved"); n != 1 {
		t.Fatalf("moved: %d entries, want 1", n)
	}

	// A concurrent migrate removed the edge: illegal_edge, not stale.
	register("removed")
	hj.hooks = []func(){func() {
		newGraph, newPreds := obj(t, `{"a":["c"],"b":["a"],"c":["a"]}`), obj(t, `{}`)
		p := f.authorizePayload(AuthorizeRequest{Kind: "migrate", ResourceID: "removed", Rationale: "drop a->b", NewGraph: newGraph, NewEdgePredicates: newPreds})
		if _, err := f.g.Migrate(ctx, MigrateRequest{ResourceID: "removed", NewGraph: newGraph, NewEdgePredicates: newPreds, Rationale: "drop a->b",
			Authorization: alice.sign(t, NamespaceMigrate, p)}); err != nil {
			t.Error(err)
		}
	}}
	_, err = f.transition("removed", "a", "b")
	wantCode(t, err, CodeIllegalEdge, "no longer declared")
	if n := entries("removed"); n != 1 {
		t.Fatalf("removed: %d entries, want only the migrate's", n)
	}

	// The edge survived but the policy changed (an upgrade): the verdict
	// was reached under the old policy, so it is stale.
	register("upgraded")
	hj.hooks = []func(){func() {
		if _, err := f.g.Upgrade(ctx, UpgradeRequest{ResourceID: "upgraded", NewGraph: obj(t, `{"a":["b","c","d"],"b":["a"],"c":["a"],"d":[]}`),
			NewEdgePredicates: obj(t, preds), Rationale: "add d"}); err != nil {
			t.Error(err)
		}
	}}
	_, err = f.transition("upgraded", "a", "b")
	wantCode(t, err, CodeStaleFromState, "policy changed")
	if n := entries("upgraded"); n != 1 {
		t.Fatalf("upgraded: %d entries, want only the upgrade's", n)
	}

	// The very same request (same key) committed meanwhile: replayed.
	register("same")
	var inner *TransitionResult
	hj.hooks = []func(){func() { inner = f.mustTransition("same", "a", "b", withKey("k")) }}
	res := f.mustTransition("same", "a", "b", withKey("k"))
	if res.Status != "replayed" || inner == nil || inner.Status != "applied" || res.LedgerRef != inner.LedgerRef || res.CurrentState != "b" {
		t.Fatalf("outer %+v, inner %+v", res, inner)
	}
	if n := entries("same"); n != 1 {
		t.Fatalf("same: %d entries, want 1", n)
	}

	// Nothing concurrent: applied.
	register("quiet")
	if res := f.mustTransition("quiet", "a", "b"); res.Status != "applied" {
		t.Fatal(res.Status)
	}
}

// TestLockTimeoutAndFence: a writer that cannot get the resource lock in
// time gives up with lock_timeout, and a holder whose lock file was
// removed or replaced writes nothing (lock_lost).
func TestLockTimeoutAndFence(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	id := "locked"
	f.register(RegisterRequest{ResourceID: id, Graph: obj(t, `{"a":["b"],"b":["a"]}`), EdgePredicates: obj(t, `{}`), Initial: "a"})
	dir := f.dir(id)
	lockPath := filepath.Join(dir, lockFile)

	// Another holder (a separate open file description, as another
	// process would have).
	other := flock.New(lockPath)
	if ok, err := other.TryLock(); err != nil || !ok {
		t.Fatalf("TryLock: %v %v", ok, err)
	}
	g, err := New(Options{Root: f.root, Getenv: f.env.get, LockTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Transition(ctx, TransitionRequest{ResourceID: id, FromState: "a", ToState: "b", Artifacts: map[string]any{}})
	wantCode(t, err, CodeLockTimeout)
	other.Unlock()
	if n := len(f.history(id).Ledger); n != 0 {
		t.Fatalf("%d entries written without the lock", n)
	}

	// The fence: the lock file is removed (or replaced) while held.
	for name, swap := range map[string]func(){
		"removed":  func() { os.Remove(lockPath) },
		"replaced": func() { os.Remove(lockPath); os.WriteFile(lockPath, nil, 0o644) },
	} {
		t.Run(name, func(t *testing.T) {
			h, err := f.g.lock(ctx, id, dir)
			if err != nil {
				t.Fatal(err)
			}
			defer h.unlock()
			r, err := f.g.load(id, dir)
			if err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(filepath.Join(dir, ledgerFile))
			reg, _ := os.ReadFile(filepath.Join(dir, registryFile))
			swap()
			e := &ledger.Entry{FromState: "a", ToState: "b", Outcome: "applied", Kind: "transition", ResolvedBy: "agent"}
			_, err = f.g.commit(h, dir, r, e, nil)
			wantCode(t, err, CodeLockLost)
			wantCode(t, f.g.save(h, dir, r), CodeLockLost)
			after, _ := os.ReadFile(filepath.Join(dir, ledgerFile))
			reg2, _ := os.ReadFile(filepath.Join(dir, registryFile))
			if string(before) != string(after) || string(reg) != string(reg2) {
				t.Fatal("a write went through after the fence failed")
			}
		})
	}
}

// TestPayloadDigestBytes pins the bytes of the payload digest
// (docs/guard.md, "Checksums and digests"): stores are shared with the
// reference's engines, whose replays must match ours. The expected canonical
// text is written out by hand, not produced by the code under test.
func TestPayloadDigestBytes(t *testing.T) {
	f := newFixture(t)
	id := "digest"
	reg := f.register(f.featureRequest(id))
	sha := func(text string) string {
		sum := sha256.Sum256([]byte(text))
		return hex.EncodeToString(sum[:])
	}
	withFiles := func(r *TransitionRequest) { r.ModifiedFiles = []string{"b", "é", "a"} }
	art := withArtifacts(map[string]any{"plan": "docs/plan.md", "n": 3})

	// Version 2, as every new entry is written: the policy checksum included.
	r := f.mustTransition(id, "draft", "review", withKey("v2"), art, withFiles)
	v2 := `{"artifacts":{"n":3,"plan":"docs/plan.md"},"from_state":"draft","modified_files":["a","b","\u00e9"],` +
		`"policy_checksum":"` + reg.Checksum + `","resolved_by":"agent","to_state":"review"}`
	if want := sha(v2); r.PayloadDigest != want {
		t.Errorf("version 2 payload digest %s, want sha256(%s) = %s", r.PayloadDigest, v2, want)
	}

	// Version 1, as legacy entries hold it: without the policy checksum. An
	// entry written with it replays the same request.
	v1 := `{"artifacts":{"n":3,"plan":"docs/plan.md"},"from_state":"draft","modified_files":["a","b","\u00e9"],` +
		`"resolved_by":"agent","to_state":"review"}`
	d1 := sha(v1)
	key := "v1"
	dir := f.dir(id)
	h, err := f.g.lock(context.Background(), id, dir)
	if err != nil {
		t.Fatal(err)
	}
	e := &ledger.Entry{FromState: "draft", ToState: "review", Outcome: "refused", Kind: "transition", ResolvedBy: "agent",
		IdempotencyKey: &key, PayloadDigest: &d1, PayloadDigestVersion: 1}
	_, err = f.g.commit(h, dir, mustLoad(t, f, id), e, nil)
	h.unlock()
	if err != nil {
		t.Fatal(err)
	}
	if r := f.mustTransition(id, "draft", "review", withKey("v1"), art, withFiles); r.Status != "replayed" {
		t.Errorf("a version 1 entry over sha256(%s) does not replay: %+v", v1, r)
	}
}

// TestNormalizeVerdict pins what docs/guard.md ("The verdict") promises of
// every number and text a verdict may carry before it is hashed: nearest
// integer (halves away from zero), clamped to ±(2^53-1), non-finite 0,
// -0 as 0, text made valid UTF-8, anything that is not JSON null. Through
// the public API only integers reach it today, so nothing else pins it.
func TestNormalizeVerdict(t *testing.T) {
	in := map[string]any{
		"half": 2.5, "neg_half": -2.5, "down": 1.4, "up": 1.6, "neg_zero": math.Copysign(0, -1),
		"nan": math.NaN(), "inf": math.Inf(-1), "huge": 1e300, "f32": float32(7.5), "i": 42, "i64": int64(-3),
		"text": "ok\xffbad", "list": []any{0.5, "x"}, "strings": []string{"a\xfe"}, "func": func() {},
		"nested": map[string]any{"n": 9.9},
	}
	got, err := canon.Marshal(normalize(in))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"down":1,"f32":8,"func":null,"half":3,"huge":9007199254740991,"i":42,"i64":-3,"inf":0,` +
		`"list":[1,"x"],"nan":0,"neg_half":-3,"neg_zero":0,"nested":{"n":10},"strings":["a\ufffd"],` +
		`"text":"ok\ufffdbad","up":2}`
	if string(got) != want {
		t.Errorf("normalize:\n got %s\nwant %s", got, want)
	}
}
