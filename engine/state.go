package engine

import (
	"encoding/json"
	"time"
)

// RunStatus is the status of a run, as persisted and as a response
// reports it (ready is a response's only: the run is running and steps
// await results).
type RunStatus string

// Run statuses.
const (
	StatusReady           RunStatus = "ready" // response only: steps await results
	StatusRunning         RunStatus = "running"
	StatusCompleted       RunStatus = "completed"
	StatusFailed          RunStatus = "failed"
	StatusBudgetExhausted RunStatus = "budget_exhausted"
	StatusCancelled       RunStatus = "cancelled"
)

// Terminal reports a status a run never leaves.
func (s RunStatus) Terminal() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusBudgetExhausted || s == StatusCancelled
}

// StepStatus is the status of a step or of a fanout item.
type StepStatus string

// Step statuses.
const (
	StepPending     StepStatus = "pending"
	StepReady       StepStatus = "ready"
	StepRunning     StepStatus = "running"
	StepWaitingGate StepStatus = "waiting_gate"
	// StepInterrupted: an attempt started and its process died before it
	// reported; a person decides whether it runs again.
	StepInterrupted StepStatus = "interrupted"
	StepSucceeded   StepStatus = "succeeded"
	StepFailed      StepStatus = "failed"
	StepSkipped     StepStatus = "skipped"
)

// Terminal reports a status a step leaves only through a revise reset.
func (s StepStatus) Terminal() bool {
	return s == StepSucceeded || s == StepFailed || s == StepSkipped
}

// WaitingKind says what a running run waits on.
type WaitingKind string

// What a run can wait on.
const (
	// WaitGate: a person must decide a gate.
	WaitGate WaitingKind = "gate"
	// WaitFanout: an engine-dispatched fanout's items are being worked.
	WaitFanout WaitingKind = "fanout"
	// WaitSubflow: a subflow waits on something of its own.
	WaitSubflow WaitingKind = "subflow"
	// WaitEvaluate: an evaluate step's command is running.
	WaitEvaluate WaitingKind = "evaluate"
	// WaitInterrupted: an interrupted attempt waits for a person to
	// decide whether it runs again (approve) or fails (kill).
	WaitInterrupted WaitingKind = "interrupted"
)

// stateFormat names the layout of the engine's state document. v2 runs
// may hold records that refer to result events instead of holding the
// values (docs/engine.md, "What is persisted"), so an engine that knows
// only v1 refuses them rather than read outputs as missing; a v1 run is
// read as it is and written as v2 from its next update.
const (
	stateFormat   = "stratum.engine.run.v2"
	stateFormatV1 = "stratum.engine.run.v1"
)

// runState is the engine's persisted current state of one run: the store's
// opaque state document. It holds no event history (that is the store's
// event log), so its size depends on the spec and the run's steps, not on
// how long the run has been going.
type runState struct {
	Format         string `json:"format"`
	ID             string `json:"id"`
	FlowName       string `json:"flowName"`
	RevisionDigest string `json:"revisionDigest"`
	WorkspaceRoot  string `json:"workspaceRoot,omitempty"`
	// WorkspaceAnchor is the allowed directory the policy admitted the
	// root under, through which file functions open it (see
	// [Policy.Workspace]); "" for a run planned without a policy or
	// before anchors were recorded.
	WorkspaceAnchor string    `json:"workspaceAnchor,omitempty"`
	CreatedAt       time.Time `json:"createdAt"`
	UpdatedAt       time.Time `json:"updatedAt"`

	Status    RunStatus `json:"status"`
	Output    Value     `json:"output,omitzero"`
	Failure   *Failure  `json:"failure,omitempty"`
	FlowSpent Ledger    `json:"flowSpent"`
	// ReceiptTotal is the sum of every receipt ever recorded: the floor
	// flowSpent returns to on a revert (spend never goes down).
	ReceiptTotal    Ledger                 `json:"receiptTotal"`
	Rounds          int                    `json:"rounds,omitempty"`
	Steps           map[string]*stepState  `json:"steps"`
	Carry           map[string]*CarryEntry `json:"carry,omitempty"`
	CancelRequested bool                   `json:"cancelRequested,omitempty"`
	Background      *backgroundState       `json:"background,omitempty"` // a server drives the run (lease.go)

	// ColdRecent and ColdChunks index the finished root steps, each
	// written once into an engine.step_state event when it finished: the
	// refs of the steps finished since the last chunk, and the seqs of the
	// engine.cold_index events holding the earlier refs (see persist.go).
	ColdRecent []coldRef `json:"coldRecent,omitempty"`
	ColdChunks []int64   `json:"coldChunks,omitempty"`
	// LegacyCold is the index of documents written before the chunked one
	// (finished step → seq); it is read, never written again.
	LegacyCold map[string]int64 `json:"cold,omitempty"`
	// cold is the whole index by step id, built when the document is read;
	// coldDone counts its entries that succeeded or were skipped.
	cold     map[string]coldRef
	coldDone int
	// plan is the plan decodeRun compiled from Spec while it read the
	// rest of the state, for planFor (a plan too large for the cache is
	// not found there).
	plan *compiled
	// Checkpoints map labels (in commit order) to the seq of the internal
	// event holding the snapshot.
	Checkpoints       []checkpointRef `json:"checkpoints,omitempty"`
	GenerationCounter int64           `json:"generationCounter"`
	ReceiptCounter    int64           `json:"receiptCounter"`
	// ExternalReceipts maps the dispatchId of each usage_report receipt to
	// its seq, for idempotence.
	ExternalReceipts map[string]int64 `json:"externalReceipts,omitempty"`

	Input Value `json:"input"`
	// InputSeq is the engine.input record holding Input (the document
	// leaves it out: see persist.go).
	InputSeq int64 `json:"inputSeq,omitempty"`
	// SpecSeq is the seq of the internal event holding the spec snapshot
	// (the ordered JSON the revision digest hashes).
	SpecSeq int64 `json:"specSeq"`
	// Spec is loaded from that event only when this process has no
	// compiled plan for the digest.
	Spec json.RawMessage `json:"-"`
	// inputBytes is the estimate of Input's heap from its record
	// (decodedBytes), what the decoded-state cache counts it by
	// (runHeapEstimate).
	inputBytes int
}

// Failure is why an attempt, a step or a run failed.
type Failure struct {
	Attempt int    `json:"attempt" jsonschema:"the attempt that failed (0 for a gate decision or a run-level failure)"`
	Reason  string `json:"reason" jsonschema:"why, in words: fix exactly this"`
	// Cause and Step are set on a run's failure: what ended the run, as a
	// fact a front end can branch on, and the step it is about.
	Cause FailureCause `json:"cause,omitempty" jsonschema:"on a run's failure: what ended it: step_failed, gate_killed, rounds_exhausted, budget_exhausted, dead_end, output_invalid, carry_unresolved, dispatch_unavailable or internal"`
	Step  string       `json:"step,omitempty" jsonschema:"on a run's failure: the step (or gate) it is about, when there is one"`
}

// FailureCause says what ended a run.
type FailureCause string

// What can end a run as failed or budget_exhausted.
const (
	// CauseStepFailed: a step used its attempts and had no on_fail route
	// (Step names it; for a subflow's step, its run step).
	CauseStepFailed FailureCause = "step_failed"
	// CauseGateKilled: a gate was decided kill with no on_kill route.
	CauseGateKilled FailureCause = "gate_killed"
	// CauseRoundsExhausted: a revise went beyond the flow's or the gate's
	// max_rounds.
	CauseRoundsExhausted FailureCause = "rounds_exhausted"
	// CauseBudgetExhausted: the flow's budget was exceeded.
	CauseBudgetExhausted FailureCause = "budget_exhausted"
	// CauseDeadEnd: nothing can ever run again.
	CauseDeadEnd FailureCause = "dead_end"
	// CauseOutputInvalid: the flow's output is missing or breaks its
	// contract.
	CauseOutputInvalid FailureCause = "output_invalid"
	// CauseCarryUnresolved: a carry's initial value resolves to nothing.
	CauseCarryUnresolved FailureCause = "carry_unresolved"
	// CauseDispatchUnavailable: an engine fanout has no dispatcher.
	CauseDispatchUnavailable FailureCause = "dispatch_unavailable"
	// CauseInternal: a fault in the engine.
	CauseInternal FailureCause = "internal"
)

// because returns a copy of f with a cause and the step it is about.
func (f *Failure) because(cause FailureCause, step string) *Failure {
	c := *f
	c.Cause, c.Step = cause, step
	return &c
}

// Ledger is an amount of resources: spend, a budget or a usage report.
// Zero keys are omitted.
type Ledger struct {
	USD        float64 `json:"usd,omitempty" jsonschema:"US dollars"`
	Tokens     float64 `json:"tokens,omitempty" jsonschema:"model tokens"`
	Dispatches float64 `json:"dispatches,omitempty" jsonschema:"agent dispatches (counted by the engine)"`
	MS         float64 `json:"ms,omitempty" jsonschema:"milliseconds"`
}

// IsZero reports an all-zero ledger.
func (l Ledger) IsZero() bool { return l == Ledger{} }

func (l Ledger) add(o Ledger) Ledger {
	return Ledger{USD: l.USD + o.USD, Tokens: l.Tokens + o.Tokens, Dispatches: l.Dispatches + o.Dispatches, MS: l.MS + o.MS}
}

func (l Ledger) max(o Ledger) Ledger {
	return Ledger{USD: max(l.USD, o.USD), Tokens: max(l.Tokens, o.Tokens), Dispatches: max(l.Dispatches, o.Dispatches), MS: max(l.MS, o.MS)}
}

// stepState is the state of one step of a scope (or of the run's root
// flow). Audit returns the tree of them.
type stepState struct {
	Status   StepStatus `json:"status"`
	Attempts []Attempt  `json:"attempts"`
	// Epoch counts the revise resets that cleared this step.
	Epoch int `json:"epoch,omitempty"`
	// DispatchToken is the outstanding issuance of a ready do step.
	DispatchToken         string `json:"dispatchToken,omitempty"`
	AcceptedDispatchToken string `json:"acceptedDispatchToken,omitempty"`
	// Task is the rendered task text while the step is ready.
	Task string `json:"task,omitempty"`
	// GateToken is the current round of a waiting gate.
	GateToken string `json:"gateToken,omitempty"`
	// GateDigest is the digest of what a waiting gate's round shows for
	// review (see gateview.go), recorded when the round began.
	GateDigest string `json:"gateDigest,omitempty"`
	// PastGateTokens are the tokens of the gate's earlier rounds (the
	// last few), to tell a superseded token from one never issued.
	PastGateTokens []string `json:"pastGateTokens,omitempty"`
	// Decision is a resolved gate's last decision (approve or kill).
	Decision Decision `json:"decision,omitempty"`
	Output   Value    `json:"output,omitzero"`
	Failure  *Failure `json:"failure,omitempty"`
	// Routed is the failure context (or gate decision) that activated a
	// route-only step.
	Routed *Failure `json:"routed,omitempty"`
	// Skip says why a skipped step was skipped.
	Skip *SkipInfo `json:"skip,omitempty"`
	// Iterations counts iterate cycles (do) or the gate's own revisions.
	Iterations  int          `json:"iterations,omitempty"`
	Fanout      *fanoutState `json:"fanout,omitempty"`
	FanoutEpoch int          `json:"fanoutEpoch,omitempty"`
	Sub         *subState    `json:"sub,omitempty"`
	// Spent is the task ledger (for a run step: the subflow ledger).
	Spent Ledger `json:"spent"`
	// Effect is the reserved effect of a running evaluate step: its
	// command runs outside the transitions (see evaluate.go).
	Effect *effectState `json:"effect,omitempty"`
	// Revision is set on a revise target when a gate sent the work back:
	// what the reviewer said, shown with every issuance of the new round.
	Revision *Revision `json:"revision,omitempty"`
	// Started records that an agent began the ready attempt (the driver
	// says so before it starts one); a resume that finds it set knows
	// the attempt was interrupted.
	Started *AttemptStart `json:"started,omitempty"`
	// Interrupted is set on an attempt issued again after an interrupted
	// one, so that the agent can inspect what the first one left.
	Interrupted *AttemptStart `json:"interrupted,omitempty"`

	// PatchSeqs locates the recorded patch of each attempt (by attempt
	// number) that changed files: an engine.attempt_patch event.
	PatchSeqs map[int]int64 `json:"patchSeqs,omitempty"`
	// coldSeq is the seq of the internal event holding exactly this
	// (finished) state; 0 when the state lives in the state document or
	// changed since it was written. Anything that mutates a finished step
	// must call touch.
	coldSeq int64
	// outputRef is the result event holding Output, once a step record
	// refers to it (see record.go).
	outputRef *valueRef
}

// Revision is why a step runs again: a person sent its work back at a
// gate with revise.
type Revision struct {
	// Gate is the gate that decided revise (scoped id).
	Gate string `json:"gate" jsonschema:"the gate whose revise sent the work back"`
	// Round is the flow's revise round this run of the step belongs to.
	Round int `json:"round" jsonschema:"the revise round this re-run belongs to (1 for the first revision)"`
	// Note is what the reviewer said (the decision's rationale).
	Note string `json:"note,omitzero" jsonschema:"what the reviewer asked for: do exactly that"`
	// ResolvedBy is who decided.
	ResolvedBy string `json:"resolvedBy,omitzero" jsonschema:"who decided the revise"`
	// SentBack is the step's output before the revise: the work the
	// reviewer saw and sent back.
	SentBack Value `json:"sentBack,omitzero" jsonschema:"the output of this step that was reviewed and sent back"`
}

// Changes are what one attempt changed in a git workspace, as the driver
// measured them: the repository's HEAD and the tree of its working files
// (tracked and untracked, not ignored) before and after the attempt.
type Changes struct {
	HeadBefore string `json:"headBefore" jsonschema:"HEAD before the attempt"`
	HeadAfter  string `json:"headAfter" jsonschema:"HEAD after the attempt"`
	TreeBefore string `json:"treeBefore" jsonschema:"the tree of the working files before the attempt"`
	TreeAfter  string `json:"treeAfter" jsonschema:"the tree of the working files after the attempt"`
	// Stat is git's diff stat of the attempt's changes.
	Stat string `json:"stat,omitempty" jsonschema:"diff stat of the attempt's changes"`
	// PatchBytes is the size of the attempt's patch (0: no changes).
	PatchBytes int `json:"patchBytes" jsonschema:"the size of the attempt's patch in bytes (0: it changed nothing)"`
	// PatchOmitted is set when the patch was over the driver's limit and
	// was not kept: PatchBytes is then its measured size.
	PatchOmitted bool `json:"patchOmitted,omitzero" jsonschema:"the patch was larger than the limit and was not kept; patchBytes is its size and the stat says what changed"`
	// Patch is the patch itself (Go callers; it is stored in the log, not
	// in the attempt).
	Patch []byte `json:"-"`
}

// AttemptStart is who started an attempt, and when.
type AttemptStart struct {
	At time.Time `json:"at" jsonschema:"when the attempt started (RFC 3339)"`
	By string    `json:"by,omitzero" jsonschema:"what started it (the driver and its agent)"`
}

// effectState is an effect one transition reserved and a later one
// settles: the settle applies only while Token is still the step's.
type effectState struct {
	Token string `json:"token"`
	// Input is the rendered input of an evaluate command.
	Input Value `json:"input,omitzero"`
}

// touch records that a step's state changed (so a finished step is
// written again).
func (s *stepState) touch() { s.coldSeq = 0 }

// SkipInfo explains a skip.
type SkipInfo struct {
	Reason string `json:"reason" jsonschema:"why the step was skipped"`
	// Source and Target are set when the step was skipped because it
	// depends on a failed step (Source) routed by on_fail, or on a killed
	// gate routed by on_kill, to Target: steps reachable from Target are
	// the recovery path and may still run.
	Source string `json:"source,omitempty" jsonschema:"the failed step or killed gate that blocked it"`
	Target string `json:"target,omitempty" jsonschema:"the recovery step the run continues from"`
}

// Attempt is one attempt of a step or fanout item.
type Attempt struct {
	Attempt int       `json:"attempt" jsonschema:"1-based attempt number"`
	At      time.Time `json:"at" jsonschema:"when the attempt was settled (RFC 3339)"`
	// Stage is the fanout stage of an item attempt.
	Stage       *int     `json:"stage,omitempty" jsonschema:"fanout items: the stage of the attempt"`
	Result      Value    `json:"result,omitzero" jsonschema:"the output that was reported (also for a rejected attempt)"`
	Failure     *Failure `json:"failure,omitempty" jsonschema:"why the attempt was rejected"`
	FailureKind string   `json:"failureKind,omitempty" jsonschema:"what rejected it: contract, ensure, iterate, connector, usage or budget"`
	Usage       *Ledger  `json:"usage,omitempty" jsonschema:"the reported cost"`
	DurationMs  *float64 `json:"durationMs,omitempty" jsonschema:"how long it took, when reported"`
	Model       string   `json:"model,omitempty" jsonschema:"the model that did it, when reported"`
	Effort      string   `json:"effort,omitempty" jsonschema:"the reasoning effort, when reported"`
	// Task is the rendered task of an accepted attempt of a do step: what
	// the agent was asked, shown to the person deciding a gate after it.
	Task string `json:"task,omitempty" jsonschema:"the accepted attempt's rendered task"`
	// Stderr is the tail of the agent's standard error (a driver's
	// connectors send it), for the audit.
	Stderr string `json:"stderr,omitempty" jsonschema:"the end of the agent's standard error, when a driver recorded it"`
	// Changes are the workspace changes the attempt made, when a driver
	// measured them.
	Changes *Changes `json:"changes,omitempty" jsonschema:"the workspace changes the attempt made (git workspaces under a driver): HEAD and tree before and after, a stat, the patch's size"`
	// resultRef is the result event holding Result, once a step record
	// refers to it (see record.go).
	resultRef *valueRef
}

// subState is the child scope of an active run step.
type subState struct {
	Input  Value                 `json:"input"`
	Steps  map[string]*stepState `json:"steps"`
	Rounds int                   `json:"rounds,omitempty"`
}

// fanoutState holds a fanout's items.
type fanoutState struct {
	// Over is the resolved array the items are drawn from (persisted in
	// an engine.fanout_over record, OverSeq; see fanout_persist.go).
	Over    Value        `json:"over,omitzero"`
	OverSeq int64        `json:"overSeq,omitempty"`
	Items   []*itemState `json:"items"`
	// Chunks are the engine.fanout_items records holding settled items.
	Chunks []int64 `json:"chunks,omitempty"`
	// Gen0 is item 0's first generation and ItemEpoch the items' first
	// epoch: item i starts at generation Gen0+i, so an item not yet
	// started is left out of the document and made again when read.
	Gen0      int64 `json:"gen0,omitempty"`
	ItemEpoch int   `json:"itemEpoch,omitempty"`
	// Merge is set once merging succeeded items into the workspace began.
	Merge *mergeState `json:"merge,omitempty"`
	// Paused says why an engine fanout stopped being driven: its agent
	// could not run (ErrAgentUnavailable). A resume clears it.
	Paused string `json:"paused,omitempty"`
	// win is the part of Items a report can change (fanout_window.go).
	win itemWindow
	// held is the estimate of the heap of the array and the settled items
	// (decodedBytes of the records they were written to or read from):
	// what the decoded-state cache counts the items outside the document
	// by (runHeapEstimate).
	held int
}

// itemState is one fanout item.
type itemState struct {
	Index                 int        `json:"index"`
	Status                StepStatus `json:"status"`
	Generation            int64      `json:"generation"`
	Stage                 int        `json:"stage"`
	Epoch                 int        `json:"epoch,omitempty"`
	DispatchToken         string     `json:"dispatchToken,omitempty"`
	AcceptedDispatchToken string     `json:"acceptedDispatchToken,omitempty"`
	Task                  string     `json:"task,omitempty"`
	Attempts              []Attempt  `json:"attempts"`
	// StageAttempts counts the attempts of the current stage.
	StageAttempts int `json:"stageAttempts,omitempty"`
	// Prev is the previous stage's output.
	Prev    Value    `json:"prev,omitzero"`
	Output  Value    `json:"output,omitzero"`
	Failure *Failure `json:"failure,omitempty"`
	// InFlight is set while an engine dispatcher holds the item.
	InFlight bool `json:"inFlight,omitempty"`
	// Started and Interrupted: see stepState (consumer items).
	Started     *AttemptStart `json:"started,omitempty"`
	Interrupted *AttemptStart `json:"interrupted,omitempty"`
	// PatchSeq is the seq of the internal engine.patch event holding the
	// changes a succeeded worktree item made, until they are merged into
	// the workspace (then 0). PatchBytes is the patch's size.
	PatchSeq   int64 `json:"patchSeq,omitempty"`
	PatchBytes int   `json:"patchBytes,omitempty"`
	// chunked is set once the item is in an engine.fanout_items record:
	// it never changes again.
	chunked bool
}

// mergeState is the progress of an engine fanout's merge into the
// workspace (worktree isolation), recorded one item at a time so that a
// restarted process continues where the last one stopped.
type mergeState struct {
	// Next is the index of the first item not yet merged (or passed over).
	Next int `json:"next"`
	// PreMerged is set once the pre_merge commands succeeded and a patch
	// was applied after them: they do not run again.
	PreMerged bool `json:"preMerged,omitempty"`
}

// CarryEntry is the current value of a loop-carried variable.
type CarryEntry struct {
	Value      Value      `json:"value" jsonschema:"the variable's current value"`
	Provenance Provenance `json:"provenance" jsonschema:"where the value came from"`
}

// Provenance says where a carry value came from.
type Provenance struct {
	Kind        string    `json:"kind" jsonschema:"initial or revise"`
	SourceStep  string    `json:"sourceStep,omitempty" jsonschema:"the step whose output the value came from"`
	SourceEpoch *int      `json:"sourceEpoch,omitempty" jsonschema:"that step's epoch"`
	Gate        string    `json:"gate,omitempty" jsonschema:"the gate whose revise carried it"`
	GateToken   string    `json:"gateToken,omitempty" jsonschema:"the gate round that carried it"`
	Round       int       `json:"round,omitempty" jsonschema:"the revise round"`
	At          time.Time `json:"at" jsonschema:"when it was written (RFC 3339)"`
}

// checkpointRef names a checkpoint and the event holding its snapshot.
type checkpointRef struct {
	Label string `json:"label"`
	Seq   int64  `json:"seq"`
}

// snapshot is the mutable part of a run, as a checkpoint saves it.
type snapshot struct {
	Status          RunStatus              `json:"status"`
	Output          Value                  `json:"output,omitzero"`
	Failure         *Failure               `json:"failure,omitempty"`
	FlowSpent       Ledger                 `json:"flowSpent"`
	Rounds          int                    `json:"rounds,omitempty"`
	Steps           map[string]*stepState  `json:"steps"`
	ColdRecent      []coldRef              `json:"coldRecent,omitempty"`
	ColdChunks      []int64                `json:"coldChunks,omitempty"`
	LegacyCold      map[string]int64       `json:"cold,omitempty"`
	Carry           map[string]*CarryEntry `json:"carry,omitempty"`
	CancelRequested bool                   `json:"cancelRequested,omitempty"`
	// EventSeq is the head of the event log when the checkpoint was
	// committed; events after it were rolled back by a revert (they stay
	// in the append-only log).
	EventSeq int64 `json:"eventSeq"`
}

func isTerminalStep(s StepStatus) bool { return s.Terminal() }

func isTerminalRun(s RunStatus) bool { return s.Terminal() }

// pristine reports a pending step that has never been touched: such steps
// are left out of the persisted document (absent means pristine pending).
func (s *stepState) pristine() bool {
	return s.Status == StepPending && len(s.Attempts) == 0 && s.Epoch == 0 && s.DispatchToken == "" &&
		s.AcceptedDispatchToken == "" && s.Task == "" && s.GateToken == "" && s.GateDigest == "" && len(s.PastGateTokens) == 0 && s.Decision == "" && !s.Output.Present &&
		s.Failure == nil && s.Routed == nil && s.Skip == nil && s.Iterations == 0 && s.Fanout == nil &&
		s.FanoutEpoch == 0 && s.Sub == nil && s.Spent.IsZero() && s.Effect == nil && s.Revision == nil && s.Started == nil && s.Interrupted == nil && s.PatchSeqs == nil
}

func newStepState() *stepState { return &stepState{Status: StepPending, Attempts: []Attempt{}} }
