package mcp

import (
	"time"

	"github.com/stratum-go/stratum/engine"
)

// This file holds the result shapes shared by several tools. Each result
// struct is both the value sent (marshalled with encoding/json) and the
// source of the tool's advertised output schema (see schema.go), so the
// jsonschema tags are the documentation a model reads.
//
// Only status is required in the advertised schema (see tool.go): an
// error result ({"status": "error", "error": {...}}) must validate against
// the same output schema as a success. Fields without omitzero are
// nevertheless always present in a success.

// statusError is the status of every refused call.
const statusError = "error"

// RunState is the run's actionable state: the answer of plan, step_done,
// gate_resolve, revert and resume.
type RunState struct {
	Status string `json:"status" jsonschema:"ready: steps await your results (see ready); running: waiting on a person (gate) or on engine work (see waiting); completed: see output; failed or budget_exhausted: see failure; cancelled; error: the call was refused (see error)"`
	RunID  string `json:"runId" jsonschema:"the run's id: pass it to every later call about this run"`
	// Ready is set for status ready.
	Ready []engine.ReadyEntry `json:"ready,omitzero" jsonschema:"steps awaiting your result: do each task and report it with stratum_step_done (runId, stepId = id, dispatchToken)"`
	// Waiting is set for status running (and with ready when something
	// else is pending too).
	Waiting []engine.Waiting `json:"waiting,omitzero" jsonschema:"what the run waits on besides you: kind gate (a person must decide; never decide it yourself unless asked), fanout or subflow (engine work: poll with stratum_flow_poll)"`
	// Output is the flow output of a completed run.
	Output  any             `json:"output,omitzero" jsonschema:"the flow's output (status completed)"`
	Failure *engine.Failure `json:"failure,omitzero" jsonschema:"why the run failed (status failed or budget_exhausted)"`
	Ledger  ledgerView      `json:"ledger" jsonschema:"what the run has spent so far, and its budget when the flow declares one"`
	// RevisionDigest is set by plan and resume.
	RevisionDigest string `json:"revisionDigest,omitzero" jsonschema:"SHA-256 of the run's spec revision (plan and resume)"`
	// RevertedTo is set by revert.
	RevertedTo string `json:"revertedTo,omitzero" jsonschema:"the checkpoint label the run was reverted to (revert)"`
}

// ledgerView mirrors engine.LedgerView with a documented schema.
type ledgerView struct {
	Spent  engine.Ledger  `json:"spent" jsonschema:"spend so far: usd, tokens, dispatches, ms (keys with zero are omitted)"`
	Budget *engine.Ledger `json:"budget,omitzero" jsonschema:"the flow's declared budget"`
}

func newLedgerView(l engine.LedgerView) ledgerView {
	return ledgerView{Spent: l.Spent, Budget: l.Budget}
}

// newRunState converts an engine response to its wire form.
func newRunState(r *engine.Response) *RunState {
	if r == nil {
		return nil
	}
	s := &RunState{
		Status: r.Status, RunID: r.RunID, Failure: r.Failure, Ledger: newLedgerView(r.Ledger),
		RevisionDigest: r.RevisionDigest, RevertedTo: r.RevertedTo,
	}
	switch r.Status {
	case engine.StatusReady:
		s.Ready = nonNil(r.Ready)
		if len(r.Waiting) > 0 {
			s.Waiting = r.Waiting
		}
	case engine.StatusRunning:
		s.Waiting = nonNil(r.Waiting)
	case engine.StatusCompleted:
		s.Output = engine.Some(r.Output)
	}
	return s
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Event is one audit event on the wire.
type Event struct {
	Seq    int64     `json:"seq" jsonschema:"position in the run's event log, from 1"`
	At     time.Time `json:"at" jsonschema:"when the event was recorded (RFC 3339)"`
	Type   string    `json:"type" jsonschema:"event kind: planned, ready, result, routed, skipped, gate_waiting, gate_resolved, completed, failed, ..."`
	StepID string    `json:"stepId,omitzero" jsonschema:"the step the event is about, when it is about one"`
	Detail any       `json:"detail,omitzero" jsonschema:"the event's details (depends on type)"`
	Hash   string    `json:"hash" jsonschema:"hash chaining the event to its predecessor (tamper evidence)"`
}

func newEvents(evs []engine.Event) []Event {
	out := make([]Event, len(evs))
	for i, ev := range evs {
		out[i] = Event{Seq: ev.Seq, At: ev.At, Type: ev.Type, StepID: ev.StepID, Hash: ev.Hash}
		if len(ev.Detail) > 0 {
			out[i].Detail = ev.Detail
		}
	}
	return out
}

// value returns the JSON of an optional engine value, nil when absent (so
// that omitzero leaves it out).
func value(v engine.Value) any {
	if !v.Present {
		return nil
	}
	return v
}
