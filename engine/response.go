package engine

import (
	"encoding/json"
	"strconv"

	"github.com/stratum-go/stratum/ir"
)

// Response is the engine's answer to plan, step done, gate resolve,
// revert and resume: the run's actionable state. Its JSON is the wire
// form of spec/mcp.md 1.2 (`status`, `runId`, `ready`, `ledger`, `output`,
// `failure`, `revisionDigest`), plus `waiting` (DESIGN decision 3). Its
// values (Output, ready entries' items) may be shared with the engine's
// state: read or encode them, do not modify them.
type Response struct {
	// Status is ready, running, completed, failed, budget_exhausted or
	// cancelled.
	Status string
	RunID  string
	// Ready lists the steps awaiting a result (status ready).
	Ready []ReadyEntry
	// Waiting lists what a running run waits on (gates, engine fanouts,
	// subflows); never a gate token.
	Waiting []Waiting
	// Output is the flow output of a completed run.
	Output any
	// Failure is set for failed and budget_exhausted.
	Failure *Failure
	Ledger  LedgerView
	// RevisionDigest is set by plan and resume.
	RevisionDigest string
	// RevertedTo is set by revert.
	RevertedTo string
}

// LedgerView is the flow ledger shown in every response.
type LedgerView struct {
	Spent  Ledger  `json:"spent"`
	Budget *Ledger `json:"budget,omitempty"`
}

// Waiting is one thing a running run waits on.
type Waiting struct {
	StepID string `json:"stepId"`
	// Kind is gate (a person must decide), fanout (engine work) or
	// subflow.
	Kind string `json:"kind"`
}

// ReadyEntry is a step (or consumer fanout item) awaiting a result.
type ReadyEntry struct {
	ID              string    `json:"id"`
	Do              string    `json:"do"`
	Agent           string    `json:"agent"`
	Attempt         int       `json:"attempt"`
	Epoch           int       `json:"epoch"`
	DispatchToken   string    `json:"dispatchToken"`
	PreviousFailure *Failure  `json:"previousFailure,omitempty"`
	Contract        *Contract `json:"contract"`
	// The fields below are set for consumer fanout items only.
	Item *ItemDescriptor `json:"-"`
}

// ItemDescriptor locates a consumer fanout item (spec/engine.md 5.4).
type ItemDescriptor struct {
	Flow           string
	Step           string
	Stage          int
	IsFinalStage   bool
	ItemIndex      int
	Item           any
	Generation     int64
	Policy         ItemPolicy
	RevisionDigest string
}

// ItemPolicy is how a consumer should isolate and merge item work.
type ItemPolicy struct {
	Isolation string   `json:"isolation"`
	Merge     string   `json:"merge"`
	PreMerge  []string `json:"pre_merge"`
}

// MarshalJSON writes the entry; consumer items carry their location.
func (r ReadyEntry) MarshalJSON() ([]byte, error) {
	type base ReadyEntry
	if r.Item == nil {
		return json.Marshal(base(r))
	}
	var digest *string
	if r.Contract != nil {
		d := r.Contract.Digest
		digest = &d
	}
	return json.Marshal(struct {
		base
		Flow           string     `json:"flow"`
		Step           string     `json:"step"`
		Stage          int        `json:"stage"`
		IsFinalStage   bool       `json:"isFinalStage"`
		ItemIndex      int        `json:"itemIndex"`
		Item           Value      `json:"item"`
		Generation     int64      `json:"generation"`
		ContractDigest *string    `json:"contractDigest"`
		Policy         ItemPolicy `json:"policy"`
		RevisionDigest string     `json:"revisionDigest"`
	}{base(r), r.Item.Flow, r.Item.Step, r.Item.Stage, r.Item.IsFinalStage, r.Item.ItemIndex,
		Some(r.Item.Item), r.Item.Generation, digest, r.Item.Policy, r.Item.RevisionDigest})
}

// MarshalJSON writes exactly the fields of the response's status.
func (r *Response) MarshalJSON() ([]byte, error) {
	m := []kv{{"status", r.Status}, {"runId", r.RunID}}
	switch r.Status {
	case StatusReady:
		ready := r.Ready
		if ready == nil {
			ready = []ReadyEntry{}
		}
		m = append(m, kv{"ready", ready})
		if len(r.Waiting) > 0 {
			m = append(m, kv{"waiting", r.Waiting})
		}
	case StatusRunning:
		w := r.Waiting
		if w == nil {
			w = []Waiting{}
		}
		m = append(m, kv{"waiting", w})
	case StatusCompleted:
		m = append(m, kv{"output", Some(r.Output)})
	case StatusFailed, StatusBudgetExhausted:
		m = append(m, kv{"failure", r.Failure})
	}
	m = append(m, kv{"ledger", r.Ledger})
	if r.RevisionDigest != "" {
		m = append(m, kv{"revisionDigest", r.RevisionDigest})
	}
	if r.RevertedTo != "" {
		m = append(m, kv{"reverted_to", r.RevertedTo})
	}
	return marshalOrdered(m)
}

type kv struct {
	k string
	v any
}

// marshalOrdered writes an object with keys in the given order.
func marshalOrdered(m []kv) ([]byte, error) {
	buf := []byte{'{'}
	for i, p := range m {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendQuote(buf, p.k)
		buf = append(buf, ':')
		b, err := json.Marshal(p.v)
		if err != nil {
			return nil, err
		}
		buf = append(buf, b...)
	}
	return append(buf, '}'), nil
}

// ledgerView is the flow ledger and budget of the run.
func (t *txn) ledgerView() LedgerView {
	lv := LedgerView{Spent: t.st.FlowSpent}
	if b := t.rootScope().flow.Budget; b != nil {
		l := budgetLedger(b)
		lv.Budget = &l
	}
	return lv
}

func budgetLedger(b *ir.Budget) Ledger {
	return Ledger{USD: b.USD, Tokens: float64(b.Tokens), Dispatches: float64(b.Dispatches), MS: float64(b.MS)}
}

// response describes the run's current actionable state without changing
// it (the view a refusal returns, and the tail of every transition).
func (t *txn) response() *Response {
	r := &Response{Status: t.st.Status, RunID: t.st.ID, Ledger: t.ledgerView()}
	switch t.st.Status {
	case StatusCompleted:
		r.Output = t.st.Output.Data
		return r
	case StatusFailed, StatusBudgetExhausted:
		r.Failure = t.st.Failure
		return r
	case StatusCancelled:
		return r
	}
	if t.st.CancelRequested {
		r.Status = StatusCancelled
		return r
	}
	r.Ready = t.readyEntries()
	r.Waiting = t.waiting()
	if len(r.Ready) > 0 {
		r.Status = StatusReady
	} else {
		r.Status = StatusRunning
	}
	return r
}

// readyEntries lists ready work in spec order (spec/engine.md 2.3): root
// do steps, then the ready do steps of each running run step, then the
// ready items of each running consumer fanout.
func (t *txn) readyEntries() []ReadyEntry {
	root := t.rootScope()
	var out []ReadyEntry
	for _, s := range root.flow.Steps {
		st := root.peek(s)
		if s.Kind == ir.KindDo && st != nil && st.Status == StepReady {
			out = append(out, t.taskEntry(root, s, st))
		}
	}
	for _, s := range root.flow.Steps {
		st := root.peek(s)
		if s.Kind != ir.KindRun || st == nil || st.Status != StepRunning || st.Sub == nil {
			continue
		}
		child := t.childScope(root, s)
		for _, cs := range child.flow.Steps {
			cst := child.peek(cs)
			if cs.Kind == ir.KindDo && cst != nil && cst.Status == StepReady {
				out = append(out, t.taskEntry(child, cs, cst))
			}
		}
	}
	for _, s := range root.flow.Steps {
		st := root.peek(s)
		if s.Kind != ir.KindFanout || s.Fanout.Dispatch != "consumer" || st == nil || st.Status != StepRunning || st.Fanout == nil {
			continue
		}
		for _, it := range st.Fanout.Items {
			if it.Status == StepReady {
				out = append(out, t.itemEntry(s, st, it))
			}
		}
	}
	return out
}

func agentOf(a string) string {
	if a == "" {
		return ir.DefaultAgent
	}
	return a
}

func (t *txn) taskEntry(sc *scope, s *ir.Step, st *StepState) ReadyEntry {
	return ReadyEntry{
		ID: sc.scoped(s.ID), Do: st.Task, Agent: agentOf(string(s.Agent)),
		Attempt: len(st.Attempts) + 1, Epoch: st.Epoch, DispatchToken: st.DispatchToken,
		PreviousFailure: previousFailure(st), Contract: t.c.contract(s.Out),
	}
}

// previousFailure is the failure context a ready entry carries: the last
// failed attempt, or the route that activated the step.
func previousFailure(st *StepState) *Failure {
	if st.Failure != nil {
		return st.Failure
	}
	return st.Routed
}

// waiting lists what a running run waits on, in declaration order: root
// gates, each running subflow's gates (or the subflow itself), running
// engine fanouts.
func (t *txn) waiting() []Waiting {
	root := t.rootScope()
	var out []Waiting
	for _, s := range root.flow.Steps {
		st := root.peek(s)
		if st == nil {
			continue
		}
		switch {
		case st.Status == StepWaitingGate:
			out = append(out, Waiting{StepID: s.ID, Kind: "gate"})
		case s.Kind == ir.KindRun && st.Status == StepRunning:
			child := t.childScope(root, s)
			n := len(out)
			if child != nil {
				for _, cs := range child.flow.Steps {
					if cst := child.peek(cs); cst != nil && cst.Status == StepWaitingGate {
						out = append(out, Waiting{StepID: child.scoped(cs.ID), Kind: "gate"})
					}
				}
			}
			if len(out) == n && !t.hasReadyIn(child) {
				out = append(out, Waiting{StepID: s.ID, Kind: "subflow"})
			}
		case s.Kind == ir.KindFanout && st.Status == StepRunning && s.Fanout.Dispatch != "consumer":
			out = append(out, Waiting{StepID: s.ID, Kind: "fanout"})
		}
	}
	return out
}

func (t *txn) hasReadyIn(sc *scope) bool {
	if sc == nil {
		return false
	}
	for _, st := range sc.steps {
		if st.Status == StepReady {
			return true
		}
	}
	return false
}

func itoa(i int) string { return strconv.Itoa(i) }
