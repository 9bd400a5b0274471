package engine

import (
	"strconv"

	"github.com/stratum-go/stratum/ir"
)

// Response is the engine's answer to plan, step done, gate resolve,
// revert and resume: the run's actionable state. Its JSON (and the schema
// its tags describe) is the wire form every front end sends unchanged
// (docs/mcp.md): `status`, `runId`, `ready`, `waiting`, `output`,
// `failure`, `ledger`, `revisionDigest`, `revertedTo`, each present
// exactly when the status calls for it (see [Response.normalize]). Its
// values (Output, ready entries' items) may be shared with the engine's
// state: read or encode them, do not modify them.
type Response struct {
	Status RunStatus `json:"status" jsonschema:"ready: steps await your results (see ready); running: waiting on a person (gate) or on engine work (see waiting); completed: see output; failed or budget_exhausted: see failure; cancelled; error: the call was refused (see error)"`
	RunID  string    `json:"runId" jsonschema:"the run's id: pass it to every later call about this run"`
	// Ready lists the steps awaiting a result (status ready).
	Ready []ReadyEntry `json:"ready,omitzero" jsonschema:"steps awaiting your result: do each task and report it with stratum_step_done (runId, stepId = id, dispatchToken)"`
	// Waiting lists what a running run waits on (gates, engine fanouts,
	// subflows); never a gate token.
	Waiting []Waiting `json:"waiting,omitzero" jsonschema:"what the run waits on besides you: kind gate (a person must decide; never decide it yourself unless asked), fanout or subflow (engine work: poll with stratum_flow_poll)"`
	// Output is the flow output of a completed run.
	Output Value `json:"output,omitzero" jsonschema:"the flow's output (status completed)"`
	// Failure is set for failed and budget_exhausted.
	Failure *Failure   `json:"failure,omitzero" jsonschema:"why the run failed (status failed or budget_exhausted)"`
	Ledger  LedgerView `json:"ledger" jsonschema:"what the run has spent so far, and its budget when the flow declares one"`
	// RevisionDigest is set by plan and resume.
	RevisionDigest string `json:"revisionDigest,omitzero" jsonschema:"SHA-256 of the run's spec revision (plan and resume)"`
	// RevertedTo is set by revert.
	RevertedTo string `json:"revertedTo,omitzero" jsonschema:"the checkpoint label the run was reverted to (revert)"`
	// StillReady counts the ready entries left out of Ready because the
	// caller already received them (a call that asked for new entries
	// only: OnlyNew).
	StillReady int `json:"stillReady,omitzero" jsonschema:"how many steps issued by earlier calls still await your result: you already have their entries (stratum_resume lists every ready entry again)"`
}

// onlyNew leaves out of a ready response the entries whose dispatch
// token the caller already had (known), counting them in StillReady, so
// that the answers to a run's reports grow with what each report changed
// rather than with everything still pending.
func (r *Response) onlyNew(known map[string]bool) *Response {
	if r == nil || r.Status != StatusReady || len(known) == 0 {
		return r
	}
	out := *r
	out.Ready = make([]ReadyEntry, 0, len(r.Ready))
	for _, en := range r.Ready {
		if known[en.DispatchToken] {
			out.StillReady++
			continue
		}
		out.Ready = append(out.Ready, en)
	}
	return &out
}

// readyTokens is the set of dispatch tokens of the run's ready entries
// (the entries themselves are not made).
func (t *txn) readyTokens() map[string]bool {
	set := map[string]bool{}
	t.eachReady(func(_ *scope, _ *ir.Step, st *stepState) { set[st.DispatchToken] = true },
		func(_ *ir.Step, _ *stepState, it *itemState) { set[it.DispatchToken] = true })
	return set
}

// normalize makes the fields present exactly as the status says: ready
// carries its entries (and what else it waits on, if anything), running
// always carries waiting (possibly empty), completed its output (possibly
// null), failed and budget_exhausted their failure.
func (r *Response) normalize() *Response {
	switch r.Status {
	case StatusReady:
		if r.Ready == nil {
			r.Ready = []ReadyEntry{}
		}
		if len(r.Waiting) == 0 {
			r.Waiting = nil
		}
	case StatusRunning:
		r.Ready = nil
		if r.Waiting == nil {
			r.Waiting = []Waiting{}
		}
	default:
		r.Ready, r.Waiting = nil, nil
	}
	if r.Status != StatusCompleted {
		r.Output = Value{}
	}
	if r.Status != StatusFailed && r.Status != StatusBudgetExhausted {
		r.Failure = nil
	}
	return r
}

// LedgerView is the flow ledger shown in every response.
type LedgerView struct {
	Spent  Ledger  `json:"spent" jsonschema:"spend so far: usd, tokens, dispatches, ms (keys with zero are omitted)"`
	Budget *Ledger `json:"budget,omitzero" jsonschema:"the flow's declared budget"`
}

// Waiting is one thing a running run waits on.
type Waiting struct {
	StepID string `json:"stepId" jsonschema:"the step the run waits on"`
	// Kind is gate (a person must decide), fanout (engine work) or
	// subflow.
	Kind WaitingKind `json:"kind" jsonschema:"gate (a person must decide), interrupted (a person decides whether an interrupted attempt runs again), fanout or evaluate (engine work), subflow"`
	// Paused says why engine work stopped (its agent cannot run): the run
	// continues on a resume once the cause is fixed.
	Paused string `json:"paused,omitzero" jsonschema:"engine work stopped because its agent cannot run (not logged in, no network, ...): fix that, then stratum_resume"`
}

// ReadyEntry is a step (or consumer fanout item) awaiting a result. The
// fields after Contract are set for consumer fanout items only.
type ReadyEntry struct {
	ID              string    `json:"id" jsonschema:"the step id to report as stepId: a root step, <runStep>/<child> for a subflow task, <fanoutStep>/<index> for a fanout item"`
	Do              string    `json:"do" jsonschema:"the task to do, with every reference filled in"`
	Agent           string    `json:"agent" jsonschema:"the agent the spec intends for this step (claude, codex, ...); informational"`
	Attempt         int       `json:"attempt" jsonschema:"1 for the first attempt, higher on a retry"`
	Epoch           int       `json:"epoch" jsonschema:"how many times a gate revision reset this step"`
	DispatchToken   string    `json:"dispatchToken" jsonschema:"pass it back with stratum_step_done; it changes with every attempt"`
	PreviousFailure *Failure  `json:"previousFailure,omitzero" jsonschema:"why the previous attempt was rejected (or the failure that routed here): fix exactly that"`
	Contract        *Contract `json:"contract" jsonschema:"the output the step must produce: contracts[root] maps each field to its type (T? is optional); null when the step declares no output contract"`
	// Revision is set when a person sent this step's work back at a gate.
	Revision *Revision `json:"revision,omitzero" jsonschema:"a person sent this step's work back at a gate: their note says what to change, sentBack is the output they reviewed"`
	// Interrupted is set when an earlier attempt of this entry started and
	// never reported (its process died): it may have changed files.
	Interrupted *AttemptStart `json:"interrupted,omitzero" jsonschema:"an earlier attempt started (at, by) and never reported: it may have left changes; inspect the workspace before you start"`
	// FanoutItem locates a consumer fanout item; nil for a task. Its
	// fields are part of the entry's JSON when set.
	*FanoutItem
}

// FanoutItem is where a consumer fanout item's ready entry belongs
// (docs/engine.md, "Responses").
type FanoutItem struct {
	Flow         string `json:"flow" jsonschema:"fanout item: the flow of the fanout step"`
	Step         string `json:"step" jsonschema:"fanout item: the fanout step"`
	Stage        int    `json:"stage" jsonschema:"fanout item: the stage index"`
	IsFinalStage bool   `json:"isFinalStage" jsonschema:"fanout item: whether this is the last stage"`
	ItemIndex    int    `json:"itemIndex" jsonschema:"fanout item: the item's index in the fanout's list"`
	Item         Value  `json:"item" jsonschema:"fanout item: the element being processed"`
	Generation   int64  `json:"generation" jsonschema:"fanout item: enumeration generation"`
	// ContractDigest is the digest of the stage's contract, nil without
	// one.
	ContractDigest *string    `json:"contractDigest" jsonschema:"fanout item: digest of the contract (null without one)"`
	Policy         ItemPolicy `json:"policy" jsonschema:"fanout item: how to isolate and merge the item's work"`
	RevisionDigest string     `json:"revisionDigest" jsonschema:"fanout item: the run's spec revision"`
}

// ItemPolicy is how a consumer should isolate and merge item work.
type ItemPolicy struct {
	Isolation string   `json:"isolation" jsonschema:"none or worktree"`
	Merge     string   `json:"merge" jsonschema:"merge mode"`
	PreMerge  []string `json:"pre_merge" jsonschema:"checks to run before merging"`
}

// ledgerView is the flow ledger and budget of the run.
func (t *txn) ledgerView() LedgerView {
	return ledgerViewOf(t.st.FlowSpent, t.rootScope().flow.Budget)
}

// ledgerViewOf is the flow ledger of a run that has spent spent under
// budget b (nil: none).
func ledgerViewOf(spent Ledger, b *ir.Budget) LedgerView {
	lv := LedgerView{Spent: spent}
	if b != nil {
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
		r.Output = t.st.Output
		return r.normalize()
	case StatusFailed, StatusBudgetExhausted:
		r.Failure = t.st.Failure
		return r.normalize()
	case StatusCancelled:
		return r.normalize()
	}
	if t.st.CancelRequested {
		r.Status = StatusCancelled
		return r.normalize()
	}
	r.Ready = t.readyEntries()
	r.Waiting = t.waiting()
	if len(r.Ready) > 0 {
		r.Status = StatusReady
	} else {
		r.Status = StatusRunning
	}
	return r.normalize()
}

// readyEntries lists ready work in order (docs/engine.md, "Responses"): root
// do steps, then the ready do steps of each running run step, then the
// ready items of each running consumer fanout.
func (t *txn) readyEntries() []ReadyEntry {
	var out []ReadyEntry
	t.eachReady(func(sc *scope, s *ir.Step, st *stepState) { out = append(out, t.taskEntry(sc, s, st)) },
		func(s *ir.Step, st *stepState, it *itemState) { out = append(out, t.itemEntry(s, st, it)) })
	return out
}

// eachReady visits the run's ready tasks and ready consumer items, in the
// order of its answers.
func (t *txn) eachReady(task func(sc *scope, s *ir.Step, st *stepState), item func(s *ir.Step, st *stepState, it *itemState)) {
	root := t.rootScope()
	live := root.liveSteps()
	for _, s := range live {
		st := root.peek(s)
		if s.Kind == ir.KindDo && st != nil && st.Status == StepReady {
			task(root, s, st)
		}
	}
	for _, s := range live {
		st := root.peek(s)
		if s.Kind != ir.KindRun || st == nil || st.Status != StepRunning || st.Sub == nil {
			continue
		}
		child := t.childScope(root, s)
		for _, cs := range child.flow.Steps {
			cst := child.peek(cs)
			if cs.Kind == ir.KindDo && cst != nil && cst.Status == StepReady {
				task(child, cs, cst)
			}
		}
	}
	for _, s := range live {
		st := root.peek(s)
		if s.Kind != ir.KindFanout || s.Fanout.Dispatch != ir.DispatchConsumer || st == nil || st.Status != StepRunning || st.Fanout == nil {
			continue
		}
		for _, it := range st.Fanout.liveItems() {
			if it.Status == StepReady {
				item(s, st, it)
			}
		}
	}
}

func agentOf(a string) string {
	if a == "" {
		return ir.DefaultAgent
	}
	return a
}

func (t *txn) taskEntry(sc *scope, s *ir.Step, st *stepState) ReadyEntry {
	return ReadyEntry{
		ID: sc.scoped(s.ID), Do: st.Task, Agent: agentOf(string(s.Agent)),
		Attempt: len(st.Attempts) + 1, Epoch: st.Epoch, DispatchToken: st.DispatchToken,
		PreviousFailure: previousFailure(st), Contract: t.entryContract(st.DispatchToken, s.Out), Revision: revisionOf(sc, st), Interrupted: st.Interrupted,
	}
}

// entryContract is the contract of a ready entry, not made for an entry
// the answer leaves out (its token known to the caller: onlyNew).
func (t *txn) entryContract(token, name string) *Contract {
	if t.known[token] {
		return nil
	}
	return t.c.contract(name)
}

// revisionOf is the revision a task's entry carries: its own, or, for a
// subflow's task, its run step's (a revise that reset the whole subflow).
func revisionOf(sc *scope, st *stepState) *Revision {
	if st.Revision == nil && !sc.root() {
		return sc.parent.Revision
	}
	return st.Revision
}

// previousFailure is the failure context a ready entry carries: the last
// failed attempt, or the route that activated the step.
func previousFailure(st *stepState) *Failure {
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
	for _, s := range root.liveSteps() {
		st := root.peek(s)
		if st == nil {
			continue
		}
		switch {
		case st.Status == StepWaitingGate:
			out = append(out, Waiting{StepID: s.ID, Kind: WaitGate})
		case st.Status == StepInterrupted:
			out = append(out, Waiting{StepID: s.ID, Kind: WaitInterrupted})
		case s.Kind == ir.KindRun && st.Status == StepRunning:
			child := t.childScope(root, s)
			n := len(out)
			if child != nil {
				for _, cs := range child.flow.Steps {
					if cst := child.peek(cs); cst != nil && cst.Status == StepWaitingGate {
						out = append(out, Waiting{StepID: child.scoped(cs.ID), Kind: WaitGate})
					} else if cst != nil && cst.Status == StepInterrupted {
						out = append(out, Waiting{StepID: child.scoped(cs.ID), Kind: WaitInterrupted})
					}
				}
			}
			if len(out) == n && !t.hasReadyIn(child) {
				out = append(out, Waiting{StepID: s.ID, Kind: WaitSubflow})
			}
		case s.Kind == ir.KindFanout && st.Status == StepRunning && (!consumerFanout(s) || st.Fanout != nil && awaitsMerge(s, st)):
			w := Waiting{StepID: s.ID, Kind: WaitFanout}
			if st.Fanout != nil {
				w.Paused = st.Fanout.Paused
			}
			out = append(out, w)
		case s.Kind == ir.KindEvaluate && st.Status == StepRunning:
			out = append(out, Waiting{StepID: s.ID, Kind: WaitEvaluate})
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
