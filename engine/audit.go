package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/stratum-go/stratum/ir"
	"github.com/stratum-go/stratum/store"
)

// Event is one audit event of a run.
type Event struct {
	// Seq is the event's position in the run's log (1-based); a poll
	// cursor is the Seq of the last event seen.
	Seq    int64           `json:"seq" jsonschema:"position in the run's event log, from 1"`
	At     time.Time       `json:"at" jsonschema:"when the event was recorded (RFC 3339)"`
	Type   EventType       `json:"type" jsonschema:"event kind: planned, ready, result, routed, skipped, gate_waiting, gate_resolved, completed, failed, ..."`
	StepID string          `json:"stepId,omitzero" jsonschema:"the step the event is about, when it is about one"`
	Detail json.RawMessage `json:"detail,omitzero" jsonschema:"the event's details (depends on type)"`
	// Hash chains the event to its predecessor (tamper evidence).
	Hash string `json:"hash" jsonschema:"hash chaining the event to its predecessor (tamper evidence)"`
}

// AuditReport is the full durable state of a run.
type AuditReport struct {
	Status RunStatus `json:"status" jsonschema:"the run's durable status: running, completed, failed, budget_exhausted or cancelled"`
	RunID  string    `json:"runId" jsonschema:"the run's id"`
	Flow   string    `json:"flow" jsonschema:"the entry flow's name"`
	// RevisionDigest identifies the spec revision the run executes.
	RevisionDigest string                 `json:"revisionDigest" jsonschema:"SHA-256 of the run's spec revision"`
	WorkspaceRoot  string                 `json:"workspaceRoot,omitzero" jsonschema:"the run's workspace root"`
	CreatedAt      time.Time              `json:"createdAt" jsonschema:"when the run was planned (RFC 3339)"`
	UpdatedAt      time.Time              `json:"updatedAt" jsonschema:"when the run last changed (RFC 3339)"`
	Input          Value                  `json:"input" jsonschema:"the entry input"`
	Events         []Event                `json:"events" jsonschema:"every event of the run, oldest first"`
	Steps          map[string]*StepView   `json:"steps" jsonschema:"every step's state by id: status, attempts (each with its result or failure), output, spent; a waiting gate's gateToken; fanout items; sub.steps for a subflow's steps"`
	FlowSpent      Ledger                 `json:"flowSpent" jsonschema:"the run's total spend: usd, tokens, dispatches, ms"`
	Ledger         LedgerView             `json:"ledger" jsonschema:"spend and the flow's budget"`
	Output         Value                  `json:"output,omitzero" jsonschema:"the flow's output (completed)"`
	Failure        *Failure               `json:"failure,omitzero" jsonschema:"why the run failed (failed, budget_exhausted)"`
	Carry          map[string]*CarryEntry `json:"carry,omitzero" jsonschema:"loop-carried values and their provenance"`
	Rounds         int                    `json:"rounds" jsonschema:"gate revise rounds used so far"`
	Checkpoints    []string               `json:"checkpoints" jsonschema:"checkpoint labels, oldest first"`
	// NextEventsAfter is set when a limit stopped the events: the cursor
	// of the next page.
	NextEventsAfter int64 `json:"nextEventsAfter,omitzero" jsonschema:"more events follow: pass it as eventsAfter to read the next page"`
	// NextStepsAfter is set when a limit stopped the steps: the cursor of
	// the next page.
	NextStepsAfter string `json:"nextStepsAfter,omitzero" jsonschema:"more steps follow: pass it as stepsAfter to read the next page"`
	// Outline is the outline of the run's plan (shared: not to be
	// modified), for a front end that lists a subflow's steps in
	// declaration order. It is not part of the report's wire shape.
	Outline *ir.Outline `json:"-"`
}

// Audit returns a run's full durable state: every step's state (with
// tokens, attempts, spend, fanout items, subflow state — the pristine
// pending steps filled in), every event, spend, output and carry. It reads
// without the run lock (the store guarantees a whole acknowledged state).
// A long run's record is large: AuditStream reads it piece by piece.
func (e *Engine) Audit(ctx context.Context, runID string) (*AuditReport, error) {
	return e.AuditWith(ctx, runID, AuditOptions{})
}

// AuditWith is Audit narrowed by opts: a page of events, some steps.
func (e *Engine) AuditWith(ctx context.Context, runID string, opts AuditOptions) (*AuditReport, error) {
	var evs []Event
	steps := map[string]*StepView{}
	rep, err := e.AuditStream(ctx, runID, opts, AuditVisitor{
		Event: func(ev Event) error { evs = append(evs, ev); return nil },
		Step:  func(id string, v *StepView) error { steps[id] = v; return nil },
	})
	if err != nil {
		return nil, err
	}
	if evs == nil {
		evs = []Event{}
	}
	rep.Events, rep.Steps = evs, steps
	return rep, nil
}

// fillSteps adds the pristine pending steps left out of the persisted
// document, recursively into active subflows (f nil: a flow the outline
// lacks, which checkOutlineState refuses at the root).
func fillSteps(o *ir.Outline, f *ir.FlowOutline, m map[string]*stepState) {
	if f == nil {
		return
	}
	for _, s := range f.Steps {
		st, ok := m[s.ID]
		if !ok {
			st = newStepState()
			m[s.ID] = st
		}
		fillStep(o, s, st)
	}
}

// fillStep completes one step's state for a view.
func fillStep(o *ir.Outline, s ir.StepOutline, st *stepState) {
	if st.Attempts == nil {
		st.Attempts = []Attempt{}
	}
	if st.Sub != nil && s.Kind == ir.KindRun {
		if st.Sub.Steps == nil {
			st.Sub.Steps = map[string]*stepState{}
		}
		fillSteps(o, o.Flow(s.Run), st.Sub.Steps)
	}
}

// events reads events after seq `after` up to head.
func (e *Engine) events(ctx context.Context, runID string, after, head int64) ([]Event, error) {
	if after >= head {
		return []Event{}, nil
	}
	raw, err := e.store.Events(ctx, runID, after, int(head-after))
	if err != nil {
		return nil, mapStoreErr(runID, err)
	}
	out := make([]Event, 0, len(raw))
	for _, r := range raw {
		ev, ok, err := e.toEvent(ctx, runID, r)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, ev)
		}
	}
	return out, nil
}

// PollReport is a restart-safe progress view with an event cursor.
type PollReport struct {
	Status RunStatus `json:"status" jsonschema:"the run's state: ready (steps await your results), running, completed, failed, budget_exhausted or cancelled"`
	RunID  string    `json:"runId" jsonschema:"the run's id"`
	Events []Event   `json:"events" jsonschema:"the events after cursor, oldest first"`
	// NextCursor is the cursor for the next poll (the head's seq).
	NextCursor int64        `json:"nextCursor" jsonschema:"pass it as cursor to the next poll"`
	Ready      []ReadyEntry `json:"ready,omitzero" jsonschema:"steps awaiting your result (status ready), with their current dispatch tokens"`
	Waiting    []Waiting    `json:"waiting,omitzero" jsonschema:"what a running run waits on: gate (a person), fanout or subflow (engine work)"`
	Ledger     LedgerView   `json:"ledger" jsonschema:"spend and the flow's budget"`
	Output     Value        `json:"output,omitzero" jsonschema:"the flow's output (completed)"`
	Failure    *Failure     `json:"failure,omitzero" jsonschema:"why the run failed (failed, budget_exhausted)"`
	// Response is the run's actionable state (ready entries, waiting).
	Response *Response `json:"-"`
}

// Poll returns the events after cursor (the seq of the last event seen; 0
// for all) and the run's status, without taking the run lock.
func (e *Engine) Poll(ctx context.Context, runID string, cursor int64) (_ *PollReport, err error) {
	defer recoverLoad(&err)
	st, c, head, err := e.load(ctx, runID)
	if err != nil {
		return nil, err
	}
	if cursor < 0 || cursor > head.Seq {
		return nil, &Error{Kind: ErrInvalidCursor, RunID: runID,
			Message: fmt.Sprintf("invalid event cursor %d: the run has %d events; use 0..%d", cursor, head.Seq, head.Seq)}
	}
	evs, err := e.events(ctx, runID, cursor, head.Seq)
	if err != nil {
		return nil, err
	}
	t := newTxn(ctx, e, st, c)
	resp := t.response()
	return &PollReport{Status: resp.Status, RunID: st.ID, Events: evs, NextCursor: head.Seq, Ready: resp.Ready,
		Waiting: resp.Waiting, Ledger: resp.Ledger, Output: resp.Output, Failure: resp.Failure, Response: resp}, nil
}

// Status returns a run's current actionable state without changing it.
func (e *Engine) Status(ctx context.Context, runID string) (_ *Response, err error) {
	defer recoverLoad(&err)
	st, c, _, err := e.load(ctx, runID)
	if err != nil {
		return nil, err
	}
	return newTxn(ctx, e, st, c).response(), nil
}

// WaitingGate is a gate awaiting a decision.
type WaitingGate struct {
	RunID  string `json:"runId" jsonschema:"the run's id"`
	Flow   string `json:"flow" jsonschema:"the flow the gate belongs to"`
	StepID string `json:"stepId" jsonschema:"the gate's id (<runStep>/<gate> inside a subflow): stratum_gate_resolve's stepId"`
	// Kind is gate, or interrupted for a do step whose attempt was
	// interrupted (approve runs it again, kill fails it).
	Kind WaitingKind `json:"kind" jsonschema:"gate, or interrupted: a step's attempt died mid-way; approve runs it again, kill fails it"`
	// GateToken is the token a decision on this round must present.
	GateToken string `json:"gateToken" jsonschema:"the token a decision on this round must present"`
	// Targets are the routes of each decision ("" is null).
	OnApprove string `json:"onApprove" jsonschema:"where approve goes (empty: the flow continues)"`
	OnRevise  string `json:"onRevise" jsonschema:"the step revise sends back (empty: revise is not available)"`
	OnKill    string `json:"onKill" jsonschema:"where kill goes (empty: the flow fails)"`
	// Round is how many revisions the gate's flow has had so far.
	Round int `json:"round" jsonschema:"revise rounds the gate's flow has had so far"`
	// MaxRounds is the effective limit on the flow's rounds for a revise
	// of this gate: the smaller of the flow's max_rounds and what the
	// gate's own max_rounds leaves (Round + RevisesLeft).
	MaxRounds int `json:"maxRounds" jsonschema:"the effective round limit: the smaller of the flow's and the gate's"`
	// RevisesLeft is how many more revise decisions this gate can take
	// before a revise fails the run: 0 when revise is no longer possible
	// (or the gate has no on_revise route).
	RevisesLeft int `json:"revisesLeft" jsonschema:"how many more revise decisions are possible; 0: a revise would fail the run (or there is no on_revise route)"`
	// Digest is the digest of what the round shows for review; a decision
	// may present it (GateRequest.Digest) to be refused if the content
	// changed.
	Digest string `json:"digest" jsonschema:"digest of the content under review; pass it as digest to refuse a decision on content you did not see"`
}

// revisesLeft is how many more revisions a waiting gate allows: the
// smaller of what its flow's max_rounds and its own max_rounds leave.
func revisesLeft(f *ir.Flow, g *ir.Step, st *stepState, rounds int) int {
	if g.Gate.OnRevise == "" || f.MaxRounds == 0 {
		return 0
	}
	left := f.MaxRounds - rounds
	if g.Gate.MaxRounds > 0 {
		left = min(left, g.Gate.MaxRounds-st.Iterations)
	}
	return max(left, 0)
}

// eachWaitingGate calls fn for every gate of the run awaiting a decision:
// the root's, then each running subflow's.
func (t *txn) eachWaitingGate(fn func(sc *scope, s *ir.Step, ss *stepState, wg WaitingGate)) {
	root := t.rootScope()
	visit := func(sc *scope, rounds int) {
		for _, s := range sc.liveSteps() {
			ss := sc.peek(s)
			if ss != nil && s.Kind == ir.KindDo && ss.Status == StepInterrupted {
				fn(sc, s, ss, WaitingGate{RunID: t.st.ID, Flow: sc.flow.Name, StepID: sc.scoped(s.ID), Kind: WaitInterrupted,
					GateToken: ss.GateToken})
				continue
			}
			if s.Kind != ir.KindGate || ss == nil || ss.Status != StepWaitingGate {
				continue
			}
			scoped := func(x string) string {
				if x == "" {
					return ""
				}
				return sc.scoped(x)
			}
			left := revisesLeft(sc.flow, s, ss, rounds)
			fn(sc, s, ss, WaitingGate{RunID: t.st.ID, Flow: sc.flow.Name, StepID: sc.scoped(s.ID), Kind: WaitGate, GateToken: ss.GateToken,
				OnApprove: scoped(s.Gate.OnApprove), OnRevise: scoped(s.Gate.OnRevise), OnKill: scoped(s.Gate.OnKill),
				Round: rounds, MaxRounds: rounds + left, RevisesLeft: left, Digest: ss.GateDigest})
		}
	}
	visit(root, t.st.Rounds)
	for _, s := range root.liveSteps() {
		if s.Kind == ir.KindRun {
			if child := t.childScope(root, s); child != nil && root.peek(s).Status == StepRunning {
				visit(child, child.parent.Sub.Rounds)
			}
		}
	}
}

// RunPlan returns the compiled plan of a persisted run's spec, for front
// ends that describe a run (step kinds, routes, contracts in declaration
// order). The plan is shared and must not be modified.
func (e *Engine) RunPlan(ctx context.Context, runID string) (*ir.Plan, error) {
	// A plan this process compiled is found from the state document alone
	// (an audit asks after reading the run).
	if store.ValidateRunID(runID) == nil {
		if snap, err := e.store.Load(ctx, runID); err == nil {
			if st, err := decodeDoc(runID, snap.State); err == nil {
				e.mu.Lock()
				c, ok := e.plans[st.RevisionDigest]
				e.mu.Unlock()
				if ok {
					return c.plan, nil
				}
			}
		}
	}
	_, c, _, err := e.load(ctx, runID)
	if err != nil {
		return nil, err
	}
	return c.plan, nil
}
