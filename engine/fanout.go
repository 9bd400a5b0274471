package engine

import (
	"fmt"
	"strings"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/ir"
)

// Failure kinds of fanout item attempts.
const (
	kindConnector = "connector"
	kindUsage     = "usage"
	kindContract  = "contract"
	kindEnsure    = "ensure"
	kindBudget    = "budget"
)

func consumerFanout(s *ir.Step) bool { return s.Fanout.Dispatch == ir.DispatchConsumer }

// activateFanout enumerates a fanout's items (docs/engine.md, "Constructs").
func (t *txn) activateFanout(sc *scope, s *ir.Step, st *stepState) {
	attempt := len(st.Attempts) + 1
	over, err := s.Fanout.Over.Render(t.resolver(sc, nil))
	if err != nil {
		t.failAttempt(sc, s, st, attemptFailure{attempt: attempt, reason: "fanout over: " + err.Error()})
		return
	}
	arr, ok := over.([]any)
	if !ok {
		t.failAttempt(sc, s, st, attemptFailure{attempt: attempt, reason: fmt.Sprintf("fanout over must resolve to an array (%s is %s)", s.Fanout.Over.Text, typeName(over))})
		return
	}
	if msg := t.e.missingDispatcher(sc.flow); !consumerFanout(s) && msg != "" {
		t.failAttempt(sc, s, st, attemptFailure{attempt: attempt, forced: true, reason: msg})
		return
	}
	// Item i's first generation is Gen0+i (fanout_persist.go relies on it).
	f := &fanoutState{Over: Some(arr), ItemEpoch: st.Epoch, Gen0: t.st.GenerationCounter + 1, Items: make([]*itemState, len(arr))}
	t.st.GenerationCounter += int64(len(arr))
	for i := range arr {
		f.Items[i] = f.newItem(i)
	}
	items := f.Items
	st.Status = StepRunning
	st.Fanout = f
	if !consumerFanout(s) {
		for i := range items {
			t.emit(EventFanoutItemReady, sc.scoped(s.ID), FanoutItemDetail{ItemIndex: i})
		}
		t.engineWork = true
	}
}

// progressFanout promotes consumer items and settles a fanout whose items
// are all terminal. It reports whether anything changed.
func (t *txn) progressFanout(sc *scope, s *ir.Step, st *stepState) bool {
	if st.Fanout == nil {
		return false
	}
	changed := false
	f := st.Fanout
	if consumerFanout(s) {
		// Pending items are promoted in index order: those in the window
		// (started before, or waiting for a retry), then the unstarted.
		live := f.liveItems()
		active := countActive(live)
		next, i := 0, f.window().hi
		for {
			var it *itemState
			switch {
			case next < len(live):
				it = live[next]
				next++
			case i < len(f.Items):
				it = f.Items[i]
				i++
			}
			if it == nil {
				break
			}
			if !t.running() {
				return true
			}
			if it.Status != StepPending {
				continue
			}
			if active >= s.Fanout.Concurrency {
				break
			}
			f.reach(it.Index)
			t.promoteItem(sc, s, st, it)
			if it.Status == StepReady || it.Status == StepRunning {
				active++
			}
			changed = true
		}
	}
	if !t.running() {
		return true
	}
	if f.unstarted() {
		return changed
	}
	for _, it := range f.liveItems() {
		if !isTerminalStep(it.Status) {
			return changed
		}
	}
	if requireMet(s, st) && mergeNext(s, st) >= 0 {
		// Succeeded worktree items wait to be merged into the workspace,
		// one durable change at a time, by the process driving the
		// fanout (see merge.go).
		t.engineWork = true
		return changed
	}
	t.settleFanout(sc, s, st)
	return true
}

func countActive(items []*itemState) int {
	n := 0
	for _, it := range items {
		if it.Status == StepReady || it.Status == StepRunning {
			n++
		}
	}
	return n
}

func stageLimit(s *ir.Step, stage *ir.Stage) int {
	switch {
	case stage.Attempts > 0:
		return stage.Attempts
	case s.Attempts > 0:
		return s.Attempts
	}
	return ir.DefaultAttempts
}

// itemCtx is the ${item}/${prev} binding of an item's current stage.
func itemCtx(st *stepState, it *itemState) *stageCtx {
	arr, _ := st.Fanout.Over.Data.([]any)
	var item any
	if it.Index < len(arr) {
		item = arr[it.Index]
	}
	return &stageCtx{item: item, prev: it.Prev.Data, hasPrev: it.Prev.Present}
}

func (sx *stageCtx) bindings(result, input any) expr.Bindings {
	b := expr.Bindings{Result: expr.Bind(result), Input: expr.Bind(input), Item: expr.Bind(sx.item), Prev: expr.BindAbsent()}
	if sx.hasPrev {
		b.Prev = expr.Bind(sx.prev)
	}
	return b
}

// stageWhen evaluates a stage condition; only boolean true runs the stage.
// Otherwise it says why (the value, or the evaluation error).
// root is the jail of its file helpers (an item's worktree; empty means
// the workspace root).
func (t *txn) stageWhen(sc *scope, stage *ir.Stage, sx *stageCtx, root string) (bool, string) {
	if !stage.HasWhen {
		return true, ""
	}
	p, err := t.c.program(stage.When)
	if err != nil {
		return false, fmt.Sprintf("when %s failed: %v", quote(stage.When), err)
	}
	v, err := p.EvalContext(t.ctx, sx.bindings(sc.outputs(), sc.input), t.fileJail(root).options(nil))
	if err != nil {
		return false, fmt.Sprintf("when %s failed: %v", quote(stage.When), err)
	}
	if b, ok := v.(bool); ok && b {
		return true, ""
	}
	return false, fmt.Sprintf("when %s evaluated to %s", quote(stage.When), compactJSON(v))
}

// nextStage walks an item past stages whose `when` is not true. It
// reports false when the item ended skipped. root is the jail of file
// helpers (see stageWhen).
func (t *txn) nextStage(sc *scope, s *ir.Step, st *stepState, it *itemState, root string) bool {
	for {
		stage := s.Fanout.Stages[it.Stage]
		run, why := t.stageWhen(sc, stage, itemCtx(st, it), root)
		if run {
			return true
		}
		at := it.Stage
		t.emit(EventFanoutItemSkipped, sc.scoped(s.ID), FanoutItemDetail{ItemIndex: it.Index, Stage: &at, Reason: why})
		if it.Stage == len(s.Fanout.Stages)-1 {
			it.Status = StepSkipped
			it.DispatchToken, it.Task = "", ""
			return false
		}
		it.Stage++
		it.StageAttempts = 0
	}
}

// promoteItem makes a consumer item ready for its current stage.
func (t *txn) promoteItem(sc *scope, s *ir.Step, st *stepState, it *itemState) {
	for t.running() && it.Status == StepPending {
		if !t.nextStage(sc, s, st, it, "") {
			return
		}
		stage := s.Fanout.Stages[it.Stage]
		attempt := len(it.Attempts) + 1
		text, err := t.renderDo(sc, stage.Do, itemCtx(st, it))
		if err != nil {
			t.itemAttemptFailed(sc, s, st, it, attempt, kindConnector, err.Error(), Value{}, nil, nil)
			continue
		}
		switch t.reserve(sc, s, st, Ledger{Dispatches: 1}, true) {
		case levelFlow:
			t.itemAttemptFailed(sc, s, st, it, attempt, kindBudget, "flow budget exhausted", Value{}, nil, nil)
			t.exhaustRun(&Failure{Attempt: attempt, Reason: "flow budget exhausted"})
			return
		case levelSubflow, levelTask:
			t.itemAttemptFailed(sc, s, st, it, attempt, kindBudget, "task budget exhausted", Value{}, nil, nil)
			continue
		}
		it.Status = StepReady
		it.DispatchToken = t.token()
		it.AcceptedDispatchToken = ""
		it.Task = text
		t.emit(EventFanoutLedgerDebit, sc.scoped(s.ID), map[string]any{"itemIndex": it.Index, "amount": Ledger{Dispatches: 1}})
		t.emit(EventFanoutItemReady, sc.scoped(s.ID), FanoutItemDetail{ItemIndex: it.Index})
	}
}

// itemAttemptFailed records a failed item attempt; with stage attempts
// left the item goes back to pending, else it fails.
func (t *txn) itemAttemptFailed(sc *scope, s *ir.Step, st *stepState, it *itemState, attempt int, kind, reason string, ev Value, usage *Ledger, tele *Telemetry) {
	stage := it.Stage
	f := &Failure{Attempt: attempt, Reason: reason}
	rec := Attempt{Attempt: attempt, At: t.now, Stage: &stage, Failure: f, FailureKind: kind, Result: ev, Usage: usage}
	tele.apply(&rec)
	it.Attempts = append(it.Attempts, rec)
	it.Failure = f
	it.DispatchToken, it.AcceptedDispatchToken, it.Task = "", "", ""
	it.InFlight = false
	it.Started, it.Interrupted = nil, nil
	it.StageAttempts++
	failed := false
	t.emit(EventFanoutAttemptResult, sc.scoped(s.ID), FanoutItemDetail{ItemIndex: it.Index, Stage: &stage, Attempt: &attempt,
		Success: &failed, Failure: &ItemFailure{Kind: kind, Reason: reason}})
	if it.StageAttempts < stageLimit(s, s.Fanout.Stages[stage]) {
		it.Status = StepPending
		return
	}
	it.Status = StepFailed
}

// itemResult is one reported item attempt.
type itemResult struct {
	output    any
	failure   string
	stderr    string
	usage     any
	telemetry any
	token     string
	// root is the item's worktree (the jail of its ensures); empty for
	// the workspace root.
	root string
	// capture is the item's changes, taken after an attempt of the final
	// stage in a worktree; nil otherwise.
	capture *capture
}

// capture is what capturing a worktree item's changes gave.
type capture struct {
	patch []byte
	err   error
}

// settleItem settles one attempt of a consumer or engine item, the same
// way for both (docs/engine.md, "Constructs", fanout).
func (t *txn) settleItem(sc *scope, s *ir.Step, st *stepState, it *itemState, r itemResult) {
	attempt := len(it.Attempts) + 1
	id := sc.scoped(s.ID)
	tele, terr := parseTelemetry(r.telemetry)
	usage, dispatches, uerr := parseUsage(r.usage)
	if terr != nil || uerr != nil {
		why := terr
		if why == nil {
			why = uerr
		}
		t.itemAttemptFailed(sc, s, st, it, attempt, kindUsage, "invalid connector telemetry or usage: "+shapeReason(why), Value{}, nil, nil)
		return
	}
	var usageRec *Ledger
	breach := levelNone
	if !usage.IsZero() {
		u := usage
		usageRec = &u
		t.receipt("fanout", "", id, usage, tele, map[string]any{"item": map[string]any{"itemIndex": it.Index, "stage": it.Stage, "generation": it.Generation}})
		t.emit(EventFanoutLedgerDebit, id, map[string]any{"itemIndex": it.Index, "amount": usage})
		breach = t.settle(sc, s, st, usage, true)
	}
	stage := s.Fanout.Stages[it.Stage]
	output, oerr := toModel(r.output)
	ev := Value{}
	if oerr == nil && r.failure == "" {
		ev = Some(output)
	}
	switch {
	case breach == levelFlow:
		t.itemAttemptFailed(sc, s, st, it, attempt, kindBudget, "flow budget exhausted", ev, usageRec, tele)
		t.exhaustRun(&Failure{Attempt: attempt, Reason: "flow budget exhausted"})
		return
	case breach != levelNone:
		t.itemAttemptFailed(sc, s, st, it, attempt, kindBudget, "task budget exhausted", ev, usageRec, tele)
		return
	case dispatches:
		t.itemAttemptFailed(sc, s, st, it, attempt, kindUsage, "dispatches are engine-accounted; do not report them in usage (other keys were recorded)", ev, usageRec, tele)
		return
	case r.failure != "":
		t.itemAttemptFailed(sc, s, st, it, attempt, kindConnector, cleanText(r.failure), ev, usageRec, tele)
		return
	case oerr != nil:
		t.itemAttemptFailed(sc, s, st, it, attempt, kindContract, "output is not a JSON value: "+oerr.Error(), ev, usageRec, tele)
		return
	}
	sx := itemCtx(st, it)
	idx, stg := it.Index, it.Stage
	rc := &reportChecks{outName: stage.Out, contract: stage.OutContract, ensures: stage.Ensure, output: output,
		b: sx.bindings(output, sc.input), root: t.fileJail(r.root)}
	v := t.checkOutput(rc, ensureCtx{sc: sc, step: s, st: st, stepID: id, task: true, itemIndex: &idx, stage: &stg, root: r.root, token: r.token})
	if v.kind != "" {
		kind := v.kind
		if v.breach != levelNone {
			kind = kindBudget
		}
		t.itemAttemptFailed(sc, s, st, it, attempt, kind, v.reason, ev, usageRec, tele)
		if v.breach == levelFlow {
			t.exhaustRun(&Failure{Attempt: attempt, Reason: v.reason})
		}
		return
	}
	final := it.Stage == len(s.Fanout.Stages)-1
	if final && r.capture != nil {
		// The changes are persisted with the success, in the same write.
		if r.capture.err != nil {
			t.itemAttemptFailed(sc, s, st, it, attempt, kindConnector, cleanText(r.capture.err.Error()), ev, usageRec, tele)
			return
		}
		if len(r.capture.patch) > 0 {
			seq, err := t.emitBlob(evPatch, id, patchBlob{ItemIndex: it.Index, Patch: r.capture.patch})
			if err != nil {
				t.itemAttemptFailed(sc, s, st, it, attempt, kindConnector, cleanText("record the item's changes: "+err.Error()), ev, usageRec, tele)
				return
			}
			it.PatchSeq, it.PatchBytes = seq, len(r.capture.patch)
		}
	}
	rec := Attempt{Attempt: attempt, At: t.now, Stage: &stg, Result: ev, Usage: usageRec, Stderr: cleanText(r.stderr)}
	tele.apply(&rec)
	it.Attempts = append(it.Attempts, rec)
	it.InFlight = false
	it.Started, it.Interrupted = nil, nil
	it.Failure = nil
	succeeded := true
	t.emit(EventFanoutAttemptResult, id, FanoutItemDetail{ItemIndex: it.Index, Stage: &stg, Attempt: &attempt, Success: &succeeded})
	if !final {
		it.Prev = ev
		it.Stage++
		it.StageAttempts = 0
		it.Status = StepPending
		it.DispatchToken, it.Task = "", ""
		return
	}
	it.Status = StepSucceeded
	it.Output = ev
	it.AcceptedDispatchToken = r.token
	it.DispatchToken, it.Task = "", ""
}

// itemDone handles step_done for a consumer fanout item.
func (t *txn) itemDone(loc located, req StepDoneRequest) error {
	s, it := loc.step, loc.item
	id := req.StepID
	if !consumerFanout(s) {
		return t.refuse(ErrNotAwaiting, id, "step is not awaiting a client result: %q is an item of an engine-dispatched fanout", id)
	}
	st := loc.sc.state(s)
	if req.DispatchToken == "" {
		return t.refuse(ErrStaleToken, id, "step result is stale: dispatchToken is required for a consumer fanout item (%q)", id)
	}
	// An item of a fanout re-run after a revise had issuances in earlier
	// rounds even while it is fresh.
	issued := it.Status != StepPending || len(it.Attempts) > 0 || st.Epoch > 0
	if err := t.checkToken(id, it.Status, it.DispatchToken, it.AcceptedDispatchToken, req.DispatchToken, issued); err != nil {
		return err
	}
	r := itemResult{output: req.Result.Output, failure: req.Result.Failure, stderr: req.Result.Stderr,
		usage: req.Result.Usage, telemetry: req.Result.Telemetry, token: req.DispatchToken}
	if req.Result.Patch != nil && s.Fanout.Isolation == ir.IsolationWorktree {
		r.capture = &capture{patch: req.Result.Patch}
	}
	t.settleItem(loc.sc, s, st, it, r)
	t.advance()
	t.result = t.response()
	return nil
}

// requireText is a fanout's require as written.
func requireText(r ir.Require) string {
	switch {
	case r.All:
		return "all"
	case r.Any:
		return "any"
	}
	return itoa(r.Count)
}

// required is how many items of a fanout must succeed.
func required(s *ir.Step, n int) int {
	switch {
	case s.Fanout.Require.All:
		return n
	case s.Fanout.Require.Any:
		return 1
	}
	return s.Fanout.Require.Count
}

func succeededItems(items []*itemState) int {
	n := 0
	for _, it := range items {
		if it.Status == StepSucceeded {
			n++
		}
	}
	return n
}

// requireMet reports whether enough items succeeded.
func requireMet(s *ir.Step, st *stepState) bool {
	return succeededItems(st.Fanout.Items) >= required(s, len(st.Fanout.Items))
}

// settleFanout completes a fanout whose items are all terminal (and, for
// an engine fanout with worktree isolation, merged: docs/engine.md,
// "Worktree isolation of engine fanouts"). Consumer fanouts are never merged by the engine.
func (t *txn) settleFanout(sc *scope, s *ir.Step, st *stepState) {
	items := st.Fanout.Items
	required := required(s, len(items))
	succeeded := succeededItems(items)
	out := make([]any, len(items))
	for i, it := range items {
		if it.Status == StepSucceeded {
			out[i] = it.Output.Data
		}
	}
	attempt := len(st.Attempts) + 1
	if succeeded < required {
		t.failAttempt(sc, s, st, attemptFailure{attempt: attempt, forced: true,
			reason: fmt.Sprintf("fanout require %s not met (%d/%d succeeded)%s", requireText(s.Fanout.Require), succeeded, len(items), itemFailures(items))})
		return
	}
	if err := t.outputCheck(sc, s, out); err != nil {
		t.failAttempt(sc, s, st, attemptFailure{attempt: attempt, forced: true, evidence: Some(out), reason: err.Error()})
		return
	}
	st.Status = StepSucceeded
	st.Output = Some(out)
	st.Attempts = append(st.Attempts, Attempt{Attempt: attempt, At: t.now, Result: st.Output})
	t.emit(EventResult, sc.scoped(s.ID), ResultDetail{Attempt: attempt, Result: st.Output})
}

// itemEntry is the ready entry of a consumer item.
func (t *txn) itemEntry(s *ir.Step, st *stepState, it *itemState) ReadyEntry {
	stage := s.Fanout.Stages[it.Stage]
	pre := s.Fanout.PreMerge
	if pre == nil {
		pre = []string{}
	}
	contract := t.entryContract(it.DispatchToken, stage.Out)
	var digest *string
	if contract != nil {
		d := contract.Digest
		digest = &d
	}
	return ReadyEntry{
		ID: s.ID + "/" + itoa(it.Index), Do: it.Task, Agent: agentOf(string(stage.Agent)),
		Attempt: len(it.Attempts) + 1, Epoch: st.Epoch, DispatchToken: it.DispatchToken,
		PreviousFailure: it.Failure, Contract: contract, Revision: st.Revision, Interrupted: it.Interrupted,
		FanoutItem: &FanoutItem{Flow: t.st.FlowName, Step: s.ID, Stage: it.Stage, IsFinalStage: it.Stage == len(s.Fanout.Stages)-1,
			ItemIndex: it.Index, Item: Some(itemCtx(st, it).item), Generation: it.Generation, ContractDigest: digest,
			Policy:         ItemPolicy{Isolation: string(s.Fanout.Isolation), Merge: string(s.Fanout.Merge), PreMerge: pre},
			RevisionDigest: t.st.RevisionDigest},
	}
}

// maxItemFailures is how many failed items a fanout's failure names.
const maxItemFailures = 3

// itemFailures names why the first failed items failed, so that the
// fanout's failure says what went wrong without reading the events:
// "; item 0: <reason>; item 2: <reason>; and 4 more failed".
func itemFailures(items []*itemState) string {
	var b strings.Builder
	named, failed := 0, 0
	for _, it := range items {
		if it.Status != StepFailed {
			continue
		}
		failed++
		if named == maxItemFailures {
			continue
		}
		reason := "failed"
		if it.Failure != nil && it.Failure.Reason != "" {
			reason = it.Failure.Reason
		}
		if len(reason) > 300 {
			reason = evidenceCut(reason, 300)
		}
		fmt.Fprintf(&b, "; item %d: %s", it.Index, reason)
		named++
	}
	if failed > named {
		fmt.Fprintf(&b, "; and %d more failed", failed-named)
	}
	return b.String()
}
