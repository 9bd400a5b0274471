package engine

import (
	"encoding/json"
	"fmt"
)

// EventType names a kind of audit event (docs/engine.md, "Events").
type EventType string

// The audit events a run's log holds. Front ends switch on these and
// decode the detail with [Event.DecodeDetail] into the type documented
// beside each; an event type not listed here is internal and never shown.
const (
	EventPlanned             EventType = "planned"                // PlannedDetail
	EventReady               EventType = "ready"                  // ReadyDetail
	EventResult              EventType = "result"                 // ResultDetail
	EventJudged              EventType = "judged"                 // JudgedDetail
	EventRouted              EventType = "routed"                 // RoutedDetail
	EventSkipped             EventType = "skipped"                // SkippedDetail, or no detail
	EventGateWaiting         EventType = "gate_waiting"           // GateWaitingDetail
	EventGateResolved        EventType = "gate_resolved"          // GateResolvedDetail
	EventStepReset           EventType = "step_reset"             // {reason, reset, subflowsDropped}
	EventFanoutItemReady     EventType = "fanout_item_ready"      // FanoutItemDetail
	EventFanoutItemDispatch  EventType = "fanout_item_dispatched" // FanoutItemDetail
	EventFanoutAttemptResult EventType = "fanout_attempt_result"  // FanoutItemDetail
	EventFanoutItemSkipped   EventType = "fanout_item_skipped"    // FanoutItemDetail
	EventFanoutMerge         EventType = "fanout_merge"           // FanoutItemDetail
	EventFanoutLedgerDebit   EventType = "fanout_ledger_debit"    // {itemIndex, amount, source?}
	EventUsageDebit          EventType = "usage_debit"            // a receipt: {seq, source, amount, ...}
	EventCarryUpdated        EventType = "carry_updated"          // CarryDetail
	EventCheckpointCommitted EventType = "checkpoint_committed"   // CheckpointDetail
	EventCheckpointReverted  EventType = "checkpoint_reverted"    // CheckpointDetail
	EventResumed             EventType = "resumed"                // no detail
	EventCompleted           EventType = "completed"              // CompletedDetail
	EventFailed              EventType = "failed"                 // EndDetail
	EventBudgetExhausted     EventType = "budget_exhausted"       // EndDetail
	EventFlowCancelled       EventType = "flow_cancelled"         // CancelledDetail
	// EventEvaluateStarted: an evaluate step's command was reserved and
	// starts once the transition is durable.
	EventEvaluateStarted EventType = "evaluate_started" // ReadyDetail
	// EventAttemptStarted: an agent began a ready attempt.
	EventAttemptStarted EventType = "attempt_started" // AttemptDetail
	// EventAttemptReleased: an attempt start was withdrawn: the agent
	// could not run at all (the detail's by says why).
	EventAttemptReleased EventType = "attempt_released" // AttemptDetail
	// EventAttemptInterrupted: a resume found an attempt that started
	// and never reported.
	EventAttemptInterrupted EventType = "attempt_interrupted" // AttemptDetail
	// EventDispatchUnavailable: an engine fanout item's agent could not run
	// at all; the item waits and the fanout is no longer driven.
	EventDispatchUnavailable EventType = "dispatch_unavailable" // FanoutItemDetail
	// EventEffectInterrupted: a reserved effect was found unsettled by a
	// process taking the run over (its holder died); it runs again.
	EventEffectInterrupted EventType = "effect_interrupted" // ReadyDetail
	// EventDriverAcquired and EventDriverHalted are declared in lease.go.
)

// EventTypes lists every audit event type, sorted.
func EventTypes() []EventType {
	return []EventType{EventAttemptInterrupted, EventAttemptReleased, EventAttemptStarted, EventBudgetExhausted, EventCarryUpdated, EventCheckpointCommitted, EventCheckpointReverted,
		EventCompleted, EventDispatchUnavailable, EventDriverAcquired, EventDriverHalted, EventEffectInterrupted, EventEvaluateStarted, EventFailed, EventFanoutAttemptResult, EventFanoutItemDispatch, EventFanoutItemReady,
		EventFanoutItemSkipped, EventFanoutLedgerDebit, EventFanoutMerge, EventFlowCancelled, EventGateResolved,
		EventGateWaiting, EventJudged, EventPlanned, EventReady, EventResult, EventResumed, EventRouted, EventSkipped,
		EventStepReset, EventUsageDebit}
}

// DecodeDetail decodes the event's detail into v (a pointer to the detail
// type of the event's type). An event without detail leaves v unchanged.
func (ev Event) DecodeDetail(v any) error {
	if len(ev.Detail) == 0 {
		return nil
	}
	if err := json.Unmarshal(ev.Detail, v); err != nil {
		return fmt.Errorf("event %d (%s): detail: %w", ev.Seq, ev.Type, err)
	}
	return nil
}

// AttemptDetail is the detail of attempt_started and attempt_interrupted.
type AttemptDetail struct {
	Attempt int    `json:"attempt"`
	By      string `json:"by,omitempty"`
	// Retried says an interrupted attempt was issued again at once (an
	// idempotent step, or a fanout item); otherwise a person decides.
	Retried bool `json:"retried,omitempty"`
}

// PlannedDetail is the detail of a planned event.
type PlannedDetail struct {
	Flow           string `json:"flow"`
	RevisionDigest string `json:"revisionDigest"`
}

// ReadyDetail is the detail of a ready event: a do step was issued.
type ReadyDetail struct {
	Attempt int `json:"attempt"`
}

// ResultDetail is the detail of a result event: one attempt settled,
// with its result (accepted) or its failure (rejected).
type ResultDetail struct {
	Attempt int      `json:"attempt"`
	Result  Value    `json:"result,omitzero"`
	Failure *Failure `json:"failure,omitempty"`
	// Iterate is set for an iterate cycle that goes round again.
	Iterate *IterateProgress `json:"iterate,omitempty"`
}

// IterateProgress is where an iterate loop stands.
type IterateProgress struct {
	Iteration int `json:"iteration"`
	Max       int `json:"max"`
}

// JudgedDetail is the detail of a judged event: one judged ensure.
type JudgedDetail struct {
	Statement string     `json:"statement"`
	Holds     bool       `json:"holds"`
	Reason    string     `json:"reason"`
	Stakes    string     `json:"stakes"`
	Model     string     `json:"model"`
	Usage     JudgeUsage `json:"usage"`
	// ItemIndex and Stage locate a judged ensure of a fanout stage.
	ItemIndex *int `json:"itemIndex,omitempty"`
	Stage     *int `json:"stage,omitempty"`
}

// JudgeUsage is what one judge call cost.
type JudgeUsage struct {
	Tokens float64 `json:"tokens"`
	USD    float64 `json:"usd"`
}

// RoutedDetail is the detail of a routed event: a failed step's on_fail
// route was taken.
type RoutedDetail struct {
	Target  string   `json:"target"`
	Failure *Failure `json:"failure"`
}

// SkippedDetail is the detail of a skipped event.
type SkippedDetail struct {
	Reason string `json:"reason"`
}

// GateWaitingDetail is the detail of a gate_waiting event.
type GateWaitingDetail struct {
	// Digest is the digest of what the round shows for review.
	Digest string `json:"digest"`
}

// GateResolvedDetail is the detail of a gate_resolved event.
type GateResolvedDetail struct {
	Decision Decision `json:"decision"`
	// Target is the route taken (nil for a null route).
	Target     *string `json:"target"`
	Rationale  string  `json:"rationale,omitempty"`
	ResolvedBy string  `json:"resolvedBy,omitempty"`
	// Digest is the digest of the content the decision was made on.
	Digest string `json:"digest,omitempty"`
}

// FanoutItemDetail is the detail of the fanout item events (ready,
// dispatched, attempt result, skipped, merge); each sets the fields that
// apply to it.
type FanoutItemDetail struct {
	ItemIndex int  `json:"itemIndex"`
	Stage     *int `json:"stage,omitempty"`
	Attempt   *int `json:"attempt,omitempty"`
	// Success is set by attempt results and merges.
	Success *bool `json:"success,omitempty"`
	// Failure is a rejected attempt's kind and reason.
	Failure *ItemFailure `json:"failure,omitempty"`
	// Reason says why a stage was skipped or a merge failed.
	Reason string `json:"reason,omitempty"`
	// Changes is false for a merged item that changed nothing;
	// AlreadyPresent marks a merge found applied by an earlier process.
	Changes        *bool `json:"changes,omitempty"`
	AlreadyPresent bool  `json:"alreadyPresent,omitempty"`
}

// ItemFailure is a rejected item attempt in an event.
type ItemFailure struct {
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
}

// CarryDetail is the detail of a carry_updated event.
type CarryDetail struct {
	Name       string     `json:"name"`
	Reason     string     `json:"reason"`
	Provenance Provenance `json:"provenance"`
}

// CheckpointDetail is the detail of the checkpoint events.
type CheckpointDetail struct {
	Label string `json:"label"`
	// Replaced is set by a commit that reused a label.
	Replaced *bool `json:"replaced,omitempty"`
	// The revert fields.
	ReceiptsAtRevert *int64   `json:"receiptsAtRevert,omitempty"`
	StepsRestored    []string `json:"stepsRestored,omitempty"`
	EventsAtCommit   *int64   `json:"eventsAtCommit,omitempty"`
}

// CompletedDetail is the detail of a completed event as audits and polls
// show it. In the log it may instead hold {"outputOf": N} when the output
// is the result of event N (docs/engine.md, "What is persisted").
type CompletedDetail struct {
	Output Value `json:"output"`
}

// EndDetail is the detail of the failed and budget_exhausted events.
type EndDetail struct {
	Attempt int    `json:"attempt"`
	Reason  string `json:"reason"`
	// Cause and Step say, as facts, what ended the run (see
	// [FailureCause]).
	Cause FailureCause `json:"cause,omitempty"`
	Step  string       `json:"step,omitempty"`
}

// CancelledDetail is the detail of a flow_cancelled event.
type CancelledDetail struct {
	By     string       `json:"by"`
	Burned BurnedTokens `json:"burned"`
	Reason string       `json:"reason,omitempty"`
}
