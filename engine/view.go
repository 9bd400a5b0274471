package engine

// The audit view: what Audit shows of a run. The persisted structs
// (stepState, itemState, ...) carry bookkeeping a reader has no use for
// and must not build on (accepted tokens, in-flight marks, event seqs of
// internal records); the view types below are the public, documented
// shape, and their json and jsonschema tags are the wire form that every
// front end sends unchanged (docs/engine.md, "Responses").

// StepView is one step's state in an audit.
type StepView struct {
	Status   StepStatus `json:"status" jsonschema:"pending, ready, running, waiting_gate, interrupted (an attempt died: a person decides), succeeded, failed or skipped"`
	Attempts []Attempt  `json:"attempts" jsonschema:"every attempt, oldest first, each with its result or failure"`
	Epoch    int        `json:"epoch,omitzero" jsonschema:"how many times a gate revision reset this step"`
	// DispatchToken is the outstanding issuance of a ready do step.
	DispatchToken string        `json:"dispatchToken,omitzero" jsonschema:"the dispatch token of the ready issuance, to report it with stratum_step_done"`
	Task          string        `json:"task,omitzero" jsonschema:"the rendered task while the step is ready"`
	GateToken     string        `json:"gateToken,omitzero" jsonschema:"while a gate waits: the token a decision on this round must present"`
	Decision      Decision      `json:"decision,omitzero" jsonschema:"a resolved gate's decision: approve or kill"`
	Output        Value         `json:"output,omitzero" jsonschema:"the step's output once it succeeded"`
	Failure       *Failure      `json:"failure,omitzero" jsonschema:"why the last attempt failed"`
	Routed        *Failure      `json:"routed,omitzero" jsonschema:"the failure (or gate decision) that routed the run to this step"`
	Skip          *SkipInfo     `json:"skip,omitzero" jsonschema:"why the step was skipped"`
	Iterations    int           `json:"iterations,omitzero" jsonschema:"iterate cycles of a do step, or the revisions of a gate"`
	Fanout        *FanoutView   `json:"fanout,omitzero" jsonschema:"a fanout's items"`
	Sub           *SubflowView  `json:"sub,omitzero" jsonschema:"a run step's subflow: its input and steps"`
	Spent         Ledger        `json:"spent" jsonschema:"what the step has spent: usd, tokens, dispatches, ms"`
	Revision      *Revision     `json:"revision,omitzero" jsonschema:"set when a gate's revise sent this step's work back"`
	Started       *AttemptStart `json:"started,omitzero" jsonschema:"the ready attempt was started by an agent (at, by)"`
	Interrupted   *AttemptStart `json:"interrupted,omitzero" jsonschema:"an earlier attempt of the current one was interrupted (at, by)"`
}

// FanoutView is a fanout's items in an audit.
type FanoutView struct {
	Over  Value      `json:"over" jsonschema:"the array the items are drawn from"`
	Items []ItemView `json:"items" jsonschema:"one entry per element of over, in order"`
	// Merged is how many items (in index order) have been merged into the
	// workspace (worktree isolation), once merging began.
	Merged *int `json:"merged,omitzero" jsonschema:"worktree isolation: the index of the first item not yet merged into the workspace"`
}

// ItemView is one fanout item in an audit.
type ItemView struct {
	Index         int        `json:"index" jsonschema:"the item's index in over"`
	Status        StepStatus `json:"status" jsonschema:"pending, ready, running, succeeded, failed or skipped"`
	Generation    int64      `json:"generation" jsonschema:"enumeration generation"`
	Stage         int        `json:"stage" jsonschema:"the current stage index"`
	Epoch         int        `json:"epoch,omitzero" jsonschema:"the fanout round (revisions) the item belongs to"`
	DispatchToken string     `json:"dispatchToken,omitzero" jsonschema:"the dispatch token of the ready issuance (consumer fanouts)"`
	Task          string     `json:"task,omitzero" jsonschema:"the rendered task of the current stage while ready or running"`
	Attempts      []Attempt  `json:"attempts" jsonschema:"every attempt across stages, oldest first"`
	Prev          Value      `json:"prev,omitzero" jsonschema:"the previous stage's output"`
	Output        Value      `json:"output,omitzero" jsonschema:"the final stage's output once the item succeeded"`
	Failure       *Failure   `json:"failure,omitzero" jsonschema:"why the last attempt failed"`
	// PatchBytes is the size of a succeeded worktree item's captured
	// changes.
	PatchBytes int `json:"patchBytes,omitzero" jsonschema:"worktree isolation: the size in bytes of the item's captured changes"`
}

// SubflowView is the child scope of an active run step in an audit.
type SubflowView struct {
	Input  Value                `json:"input" jsonschema:"the subflow's input"`
	Steps  map[string]*StepView `json:"steps" jsonschema:"the subflow's steps by id"`
	Rounds int                  `json:"rounds,omitzero" jsonschema:"gate revise rounds used in the subflow"`
}

// viewSteps converts a scope's step states (pristine ones already filled
// in) to their views.
func viewSteps(m map[string]*stepState) map[string]*StepView {
	out := make(map[string]*StepView, len(m))
	for id, st := range m {
		out[id] = st.view()
	}
	return out
}

func (s *stepState) view() *StepView {
	v := &StepView{Status: s.Status, Attempts: nonNilAttempts(s.Attempts), Epoch: s.Epoch, DispatchToken: s.DispatchToken,
		Task: s.Task, GateToken: s.GateToken, Decision: s.Decision, Output: s.Output, Failure: s.Failure, Routed: s.Routed,
		Skip: s.Skip, Iterations: s.Iterations, Spent: s.Spent, Revision: s.Revision, Started: s.Started, Interrupted: s.Interrupted}
	if f := s.Fanout; f != nil {
		fv := &FanoutView{Over: f.Over, Items: make([]ItemView, len(f.Items))}
		for i, it := range f.Items {
			fv.Items[i] = ItemView{Index: it.Index, Status: it.Status, Generation: it.Generation, Stage: it.Stage, Epoch: it.Epoch,
				DispatchToken: it.DispatchToken, Task: it.Task, Attempts: nonNilAttempts(it.Attempts), Prev: it.Prev,
				Output: it.Output, Failure: it.Failure, PatchBytes: it.PatchBytes}
		}
		if f.Merge != nil {
			n := f.Merge.Next
			fv.Merged = &n
		}
		v.Fanout = fv
	}
	if s.Sub != nil {
		v.Sub = &SubflowView{Input: s.Sub.Input, Steps: viewSteps(s.Sub.Steps), Rounds: s.Sub.Rounds}
	}
	return v
}

func nonNilAttempts(a []Attempt) []Attempt {
	if a == nil {
		return []Attempt{}
	}
	return a
}
