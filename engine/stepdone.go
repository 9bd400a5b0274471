package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/ir"
)

// StepDoneRequest reports the result of a ready step or consumer fanout
// item.
type StepDoneRequest struct {
	RunID string
	// StepID is a root step id, "<runStep>/<child>" for a subflow task, or
	// "<fanoutStep>/<index>" for a consumer fanout item.
	StepID string
	// DispatchToken is the token of the ready entry being answered.
	DispatchToken string
	Result        StepResult
	// OnlyNew asks for an answer that lists only the ready entries issued
	// by this report (retries, newly unblocked steps), counting the
	// others, which the caller already holds, in Response.StillReady.
	OnlyNew bool
}

// StepResult is what the agent produced.
type StepResult struct {
	// Output is the step's output as JSON (nil is JSON null). Its key
	// order and number text are kept as sent.
	Output json.RawMessage
	// Failure, when non-empty, reports that the agent could not do the
	// task; it wins over Output.
	Failure string
	// Usage is the reported cost, nil or a JSON object with keys among
	// usd, tokens, ms (finite, non-negative). Dispatches are
	// engine-accounted.
	Usage json.RawMessage
	// Telemetry is nil or the JSON object {durationMs, model, effort?}.
	Telemetry json.RawMessage
	// Stderr is the tail of the agent's standard error (at most 4 KiB
	// kept), recorded with the attempt for the audit.
	Stderr string
	// Changes are the workspace changes the attempt made, when the driver
	// measured them (a git workspace): kept with the attempt, the patch
	// written once into the log (stratum diff prints it).
	Changes *Changes
	// Patch is, for the final stage of a consumer fanout item with
	// worktree isolation, the changes the consumer captured in the item's
	// worktree (a binary git patch, empty for none; Go callers only, such
	// as the driver of stratum run). The engine keeps it with the item's
	// success and merges it with the fanout, exactly as for engine
	// fanouts; nil means the consumer merges its own work.
	Patch []byte
}

// StepDone reports a step result (docs/engine.md, "Tokens" and "Step
// results and failure context"). The dispatch token
// fences the report: a missing, superseded or already-accepted token is
// refused with ErrStaleToken and the current state, and changes nothing.
// An accepted report is durable when StepDone returns; the response is the
// run's next actionable state (a retry is a ready entry for the same id
// with previousFailure).
func (e *Engine) StepDone(ctx context.Context, req StepDoneRequest) (*Response, error) {
	if err := checkResultSize(req); err != nil {
		return nil, err
	}
	t, err := e.mutate(ctx, req.RunID, func(t *txn) error {
		if err := t.guardActive(); err != nil {
			return err
		}
		if err := t.guardDriver(); err != nil {
			return err
		}
		if req.OnlyNew {
			t.known = t.readyTokens()
		}
		loc, ok := t.locate(req.StepID)
		if !ok && req.DispatchToken != "" && t.resetNested(req.StepID) {
			return t.refuse(ErrStaleToken, req.StepID, "step result is stale: %q was issued in an earlier round (a revise reset its run step or fanout)", req.StepID)
		}
		if !ok {
			return t.refuse(ErrNotAwaiting, req.StepID, "step is not awaiting a client result: run %s has no step %q", t.st.ID, req.StepID)
		}
		if loc.item != nil {
			return t.itemDone(loc, req)
		}
		return t.stepDone(loc.sc, loc.step, req)
	})
	if err != nil {
		return nil, err
	}
	return t.result, nil
}

// Size limits of a reported result (docs/engine.md, "Limits"): a step's
// output is kept in the run's state, which every later transition
// rewrites, and is read back by every audit; a failure text goes to the
// next attempt as previousFailure.
const (
	// MaxOutputBytes bounds the JSON text of a reported output (the same
	// limit as the standard output of an evaluate command or an agent).
	MaxOutputBytes = 1 << 20
	// MaxFailureBytes bounds a reported failure text.
	MaxFailureBytes = 64 << 10
)

// checkResultSize refuses an oversized result before anything is read or
// changed: the dispatch token stays valid for a smaller report.
func checkResultSize(req StepDoneRequest) error {
	refuse := func(path, what string, n, limit int, fix string) error {
		msg := fmt.Sprintf("result.%s is %d bytes, over the limit of %d bytes for %s; nothing was recorded and the dispatch token is still valid: %s",
			path, n, limit, what, fix)
		return &Error{Kind: ErrInvalidInput, RunID: req.RunID, StepID: req.StepID, Message: msg,
			Details: []Detail{{Code: "RESULT_TOO_LARGE", Path: "result." + path, Message: msg}}}
	}
	if n := len(req.Result.Output); n > MaxOutputBytes {
		return refuse("output", "a step output", n, MaxOutputBytes, "put large content in a file of the workspace and report its path (or a summary) instead")
	}
	if n := len(req.Result.Failure); n > MaxFailureBytes {
		return refuse("failure", "a failure text", n, MaxFailureBytes, "report the cause in a few lines (the end of a log, not all of it)")
	}
	return nil
}

// shapeReason is the message of a usage or telemetry shape error.
func shapeReason(err error) string {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, errShape.Error()+": "); ok {
		return rest
	}
	return msg
}

// guardActive refuses changes to cancelled and terminal runs, with the
// current state.
func (t *txn) guardActive() error {
	if t.st.Status == StatusCancelled || t.st.CancelRequested {
		return t.refuse(ErrRunCancelled, "", "run %s is cancelled; outstanding issuances cannot be resolved", t.st.ID)
	}
	if isTerminalRun(t.st.Status) {
		return t.refuse(ErrRunTerminal, "", "run %s is %s; nothing is awaiting a result or a decision", t.st.ID, t.st.Status)
	}
	return nil
}

// refuse builds a refusal carrying the current state, every ready entry
// whole: an answer that lists only new entries (t.known) is a success's,
// and the entries it leaves out are made without their contracts.
func (t *txn) refuse(kind error, stepID, format string, args ...any) *Error {
	known := t.known
	t.known = nil
	defer func() { t.known = known }()
	return &Error{Kind: kind, RunID: t.st.ID, StepID: stepID, Message: fmt.Sprintf(format, args...), State: t.response()}
}

// checkToken fences a report against a step's (or item's) issuance. A
// token for a step that has been issued before but is not the current
// issuance is stale (an earlier attempt, a reset round, an accepted
// result); a report for a step never issued is not awaited.
func (t *txn) checkToken(stepID string, status StepStatus, current, accepted, token string, issued bool) error {
	switch {
	case token == "":
		return t.refuse(ErrStaleToken, stepID, "step result is stale: missing dispatch token for %q", stepID)
	case status == StepReady && token == current:
		return nil
	case token == accepted:
		return t.refuse(ErrStaleToken, stepID, "step result is stale: the result for this dispatch of %q was already accepted", stepID)
	case issued:
		return t.refuse(ErrStaleToken, stepID, "step result is stale: dispatched for a superseded issuance of %q (it is %s now)", stepID, status)
	}
	return t.refuse(ErrNotAwaiting, stepID, "step is not awaiting a client result: %q is %s", stepID, status)
}

// checkSubflowLive refuses a report or decision for a step of a subflow
// whose run step is no longer running: every issuance of that subflow is
// superseded by its end.
func (t *txn) checkSubflowLive(sc *scope, what, id, token string) error {
	if sc.root() || sc.parent.Status == StepRunning || token == "" {
		return nil
	}
	return t.refuse(ErrStaleToken, id, "%s is stale: the subflow of %q is over (run step %q is %s)", what, id, sc.parentStep.ID, sc.parent.Status)
}

func stepIssued(st *stepState) bool {
	return st.Status != StepPending && st.Status != StepSkipped || len(st.Attempts) > 0 || st.Epoch > 0
}

// stepDone runs the step_done pipeline of a do step, its checks in the
// order of docs/engine.md, "Step results and failure context".
func (t *txn) stepDone(sc *scope, s *ir.Step, req StepDoneRequest) error {
	id := sc.scoped(s.ID)
	if s.Kind != ir.KindDo {
		return t.refuse(ErrNotAwaiting, id, "step is not awaiting a client result: %q is a %s step, not a do step", id, s.Kind)
	}
	st := sc.state(s)
	if err := t.checkSubflowLive(sc, "step result", id, req.DispatchToken); err != nil {
		return err
	}
	if err := t.checkToken(id, st.Status, st.DispatchToken, st.AcceptedDispatchToken, req.DispatchToken, stepIssued(st) || !sc.root() && sc.parent.Epoch > 0); err != nil {
		return err
	}
	t.applyResult(sc, s, st, req)
	t.advance()
	t.result = t.response()
	return nil
}

// applyResult settles one accepted report of a ready do step.
func (t *txn) applyResult(sc *scope, s *ir.Step, st *stepState, req StepDoneRequest) {
	attempt := len(st.Attempts) + 1
	res := req.Result
	fail := func(f attemptFailure) {
		f.attempt = attempt
		f.stderr = cleanText(res.Stderr)
		f.changes = t.recordChanges(st, sc.scoped(s.ID), attempt, res.Changes)
		t.failAttempt(sc, s, st, f)
	}
	tele, err := parseTelemetry(res.Telemetry)
	if err != nil {
		fail(attemptFailure{reason: "invalid connector telemetry (nothing recorded): " + shapeReason(err)})
		return
	}
	usage, dispatches, err := parseUsage(res.Usage)
	if err != nil {
		fail(attemptFailure{reason: "invalid usage ledger entry (nothing recorded): " + shapeReason(err), tele: tele})
		return
	}
	var usageRec *Ledger
	if !usage.IsZero() {
		u := usage
		usageRec = &u
		id := sc.scoped(s.ID)
		t.receipt("step_done", "", id, usage, tele, map[string]any{"epoch": st.Epoch, "attempt": attempt})
		switch t.settle(sc, s, st, usage, true) {
		case levelFlow:
			fail(attemptFailure{reason: "flow budget exhausted", usage: usageRec, tele: tele, exhaust: true})
			return
		case levelSubflow:
			fail(attemptFailure{reason: "subflow budget exhausted", usage: usageRec, tele: tele, forced: true, noRoute: true})
			return
		case levelTask:
			fail(attemptFailure{reason: "task budget exhausted", usage: usageRec, tele: tele})
			return
		}
	}
	if dispatches {
		fail(attemptFailure{reason: "dispatches are engine-accounted; do not report them in usage (other keys were recorded)", usage: usageRec, tele: tele})
		return
	}
	if res.Failure != "" {
		fail(attemptFailure{reason: cleanText(res.Failure), usage: usageRec, tele: tele})
		return
	}
	output, err := toModel(res.Output)
	if err != nil {
		fail(attemptFailure{reason: "output is not a JSON value: " + err.Error(), usage: usageRec, tele: tele})
		return
	}
	ev := Some(output)
	b := expr.Bindings{Result: expr.Bind(output), Input: expr.Bind(sc.input)}
	rc := &reportChecks{outName: s.Out, contract: s.OutContract, ensures: s.Ensure, output: output, b: b,
		root: t.fileJail(""), untilRoot: t.fileJail("")}
	if s.Iterate != nil {
		rc.until = s.Iterate.Until
	}
	v := t.checkOutput(rc, ensureCtx{sc: sc, step: s, st: st, stepID: sc.scoped(s.ID), task: true, token: req.DispatchToken})
	if v.kind != "" {
		switch v.breach {
		case levelFlow:
			fail(attemptFailure{reason: v.reason, evidence: ev, usage: usageRec, tele: tele, exhaust: true})
		case levelSubflow:
			fail(attemptFailure{reason: v.reason, evidence: ev, usage: usageRec, tele: tele, forced: true, noRoute: true})
		default:
			fail(attemptFailure{reason: v.reason, evidence: ev, usage: usageRec, tele: tele, kind: v.kind})
		}
		return
	}
	if it := s.Iterate; it != nil {
		if ok, why := v.until.holds, v.until.why; !ok {
			st.Iterations++
			reason := fmt.Sprintf("iterate until %s failed: %s", quote(it.Until), why)
			identical := len(st.Attempts) > 0 && st.Attempts[len(st.Attempts)-1].Result.Present &&
				expr.Equal(st.Attempts[len(st.Attempts)-1].Result.Data, output)
			if st.Iterations >= it.Max || identical {
				if !identical {
					reason += fmt.Sprintf(" (iterate max %d reached)", it.Max)
				}
				fail(attemptFailure{reason: reason, evidence: ev, usage: usageRec, tele: tele, forced: true, kind: "iterate"})
				return
			}
			f := &Failure{Attempt: attempt, Reason: reason}
			rec := Attempt{Attempt: attempt, At: t.now, Failure: f, Result: ev, Usage: usageRec, FailureKind: "iterate"}
			tele.apply(&rec)
			rec.Stderr = cleanText(res.Stderr)
			rec.Changes = t.recordChanges(st, sc.scoped(s.ID), attempt, res.Changes)
			st.Attempts = append(st.Attempts, rec)
			st.Failure = f
			st.DispatchToken, st.AcceptedDispatchToken, st.Task = "", "", ""
			st.Started, st.Interrupted = nil, nil
			st.Status = StepPending
			t.emit(EventResult, sc.scoped(s.ID), ResultDetail{Attempt: attempt, Failure: f,
				Iterate: &IterateProgress{Iteration: st.Iterations, Max: it.Max}})
			return
		}
	}
	if err := t.outputCheck(sc, s, output); err != nil {
		fail(attemptFailure{reason: err.Error(), evidence: ev, usage: usageRec, tele: tele, kind: "contract"})
		return
	}
	rec := Attempt{Attempt: attempt, At: t.now, Result: ev, Usage: usageRec, Task: st.Task}
	tele.apply(&rec)
	rec.Stderr = cleanText(res.Stderr)
	rec.Changes = t.recordChanges(st, sc.scoped(s.ID), attempt, res.Changes)
	st.Attempts = append(st.Attempts, rec)
	st.Output = ev
	st.Status = StepSucceeded
	st.Failure = nil
	st.AcceptedDispatchToken = req.DispatchToken
	st.DispatchToken, st.Task = "", ""
	st.Started, st.Interrupted = nil, nil
	t.emit(EventResult, sc.scoped(s.ID), ResultDetail{Attempt: attempt, Result: ev})
}
