package eventtext

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/stratum-go/stratum/engine"
)

// Describe renders one event as a short line for a person: what
// happened, to which step, and why when something failed. It returns ""
// for bookkeeping events (ledger debits) that a progress view leaves out.
// Details are read with the engine's own detail types; a detail that does
// not decode shows less, never fails.
func Describe(ev engine.Event) string {
	step := ev.StepID
	switch ev.Type {
	case engine.EventPlanned:
		var d engine.PlannedDetail
		_ = ev.DecodeDetail(&d)
		if d.Flow != "" {
			return "planned flow " + d.Flow
		}
		return "planned"
	case engine.EventReady:
		return step + ": ready (attempt " + strconv.Itoa(attemptOf(ev)) + ")"
	case engine.EventResult:
		if n, ok := plainAttempt(ev.Detail); ok {
			return step + ": attempt " + strconv.Itoa(n) + " accepted"
		}
		var d engine.ResultDetail
		_ = ev.DecodeDetail(&d)
		if d.Failure != nil {
			return fmt.Sprintf("%s: attempt %d rejected: %s", step, d.Attempt, OneLine(d.Failure.Reason))
		}
		if d.Iterate != nil {
			return fmt.Sprintf("%s: attempt %d accepted (iteration %d of at most %d)", step, d.Attempt, d.Iterate.Iteration, d.Iterate.Max)
		}
		return fmt.Sprintf("%s: attempt %d accepted", step, d.Attempt)
	case engine.EventJudged:
		var d engine.JudgedDetail
		_ = ev.DecodeDetail(&d)
		verdict := "does not hold"
		if d.Holds {
			verdict = "holds"
		}
		return fmt.Sprintf("%s: judged %q %s: %s", step, clip(d.Statement), verdict, OneLine(d.Reason))
	case engine.EventRouted:
		var d engine.RoutedDetail
		_ = ev.DecodeDetail(&d)
		reason := ""
		if d.Failure != nil {
			reason = ": " + OneLine(d.Failure.Reason)
		}
		return fmt.Sprintf("%s: failed, routed to %s%s", step, d.Target, reason)
	case engine.EventSkipped:
		var d engine.SkippedDetail
		_ = ev.DecodeDetail(&d)
		if d.Reason != "" {
			return fmt.Sprintf("%s: skipped (%s)", step, d.Reason)
		}
		return step + ": skipped"
	case engine.EventGateWaiting:
		var d engine.GateWaitingDetail
		_ = ev.DecodeDetail(&d)
		return step + ": gate waiting for a decision" + digestNote(d.Digest)
	case engine.EventGateResolved:
		var d engine.GateResolvedDetail
		_ = ev.DecodeDetail(&d)
		s := fmt.Sprintf("%s: gate resolved: %s", step, d.Decision)
		if d.Target != nil && *d.Target != "" {
			s += " -> " + *d.Target
		}
		// Who decided and why is what an audit reader looks for.
		switch {
		case d.ResolvedBy != "" && d.Rationale != "":
			s += fmt.Sprintf(" (by %s: %s)", OneLine(d.ResolvedBy), OneLine(d.Rationale))
		case d.ResolvedBy != "":
			s += fmt.Sprintf(" (by %s)", OneLine(d.ResolvedBy))
		case d.Rationale != "":
			s += fmt.Sprintf(" (%s)", OneLine(d.Rationale))
		}
		if d.Digest != "" {
			s += digestNote(d.Digest)
		}
		return s
	case engine.EventStepReset:
		return step + ": reset for a revision"
	case engine.EventFanoutItemReady, engine.EventFanoutItemDispatch, engine.EventFanoutAttemptResult,
		engine.EventFanoutItemSkipped, engine.EventFanoutMerge:
		var d engine.FanoutItemDetail
		_ = ev.DecodeDetail(&d)
		return describeItemEvent(ev.Type, step, d)
	case engine.EventFanoutLedgerDebit, engine.EventUsageDebit:
		return ""
	case engine.EventCarryUpdated:
		var d engine.CarryDetail
		_ = ev.DecodeDetail(&d)
		return fmt.Sprintf("carry %s updated (%s)", d.Name, d.Reason)
	case engine.EventCheckpointCommitted, engine.EventCheckpointReverted:
		var d engine.CheckpointDetail
		_ = ev.DecodeDetail(&d)
		if ev.Type == engine.EventCheckpointCommitted {
			return "checkpoint " + d.Label + " committed"
		}
		return "reverted to checkpoint " + d.Label
	case engine.EventResumed:
		return "resumed"
	case engine.EventCompleted:
		return "completed"
	case engine.EventFailed, engine.EventBudgetExhausted:
		var d engine.EndDetail
		_ = ev.DecodeDetail(&d)
		what := "failed"
		if ev.Type == engine.EventBudgetExhausted {
			what = "budget exhausted"
		}
		return what + ": " + OneLine(d.Reason) + CauseNote(d.Cause, d.Step)
	case engine.EventAttemptStarted, engine.EventAttemptReleased, engine.EventAttemptInterrupted:
		var d engine.AttemptDetail
		_ = ev.DecodeDetail(&d)
		return describeAttemptEvent(ev.Type, step, d)
	case engine.EventDispatchUnavailable:
		var d engine.FanoutItemDetail
		_ = ev.DecodeDetail(&d)
		s := fmt.Sprintf("%s[%d]: its agent cannot run", step, d.ItemIndex)
		if d.Reason != "" {
			s += " (" + OneLine(d.Reason) + ")"
		}
		return s + "; the fanout waits: fix that, then resume the run"
	case engine.EventEvaluateStarted:
		return fmt.Sprintf("%s: evaluate command started (attempt %d)", step, attemptOf(ev))
	case engine.EventEffectInterrupted:
		return fmt.Sprintf("%s: its command (attempt %d) was interrupted: the process running it died; it runs again", step, attemptOf(ev))
	case engine.EventFlowCancelled:
		var d engine.CancelledDetail
		_ = ev.DecodeDetail(&d)
		if d.Reason != "" {
			return "cancelled: " + OneLine(d.Reason)
		}
		return "cancelled"
	}
	if step != "" {
		return step + ": " + string(ev.Type)
	}
	return string(ev.Type)
}

// describeAttemptEvent renders the start, withdrawal or interruption of
// an agent's attempt.
func describeAttemptEvent(typ engine.EventType, step string, d engine.AttemptDetail) string {
	by := ""
	if d.By != "" {
		by = " by " + OneLine(d.By)
	}
	switch typ {
	case engine.EventAttemptStarted:
		return fmt.Sprintf("%s: attempt %d started%s", step, d.Attempt, by)
	case engine.EventAttemptReleased:
		return fmt.Sprintf("%s: attempt %d withdrawn: its agent could not run%s; it is still to do", step, d.Attempt, parenthesised(d.By))
	}
	s := fmt.Sprintf("%s: attempt %d (started%s) was interrupted before it reported: it may have left changes", step, d.Attempt, by)
	if d.Retried {
		return s + "; it runs again"
	}
	return s + "; a person decides whether it runs again (stratum gate show|approve|reject RUN " + step + ")"
}

func parenthesised(s string) string {
	if s == "" {
		return ""
	}
	return " (" + OneLine(s) + ")"
}

// CauseNote says in words what ended a run, and where, as a suffix to
// the failure's reason ("" when the cause and step are unknown).
func CauseNote(cause engine.FailureCause, step string) string {
	words := map[engine.FailureCause]string{
		engine.CauseStepFailed:          "a step failed",
		engine.CauseGateKilled:          "a gate's kill",
		engine.CauseRoundsExhausted:     "a revise past the round limit",
		engine.CauseBudgetExhausted:     "the budget ran out",
		engine.CauseDeadEnd:             "nothing could run any more",
		engine.CauseOutputInvalid:       "the flow's output did not match its contract",
		engine.CauseCarryUnresolved:     "a carried value could not be resolved",
		engine.CauseDispatchUnavailable: "an agent could not run",
		engine.CauseInternal:            "an internal error",
	}[cause]
	switch {
	case words == "" && step == "":
		return ""
	case words == "":
		return " (at step " + step + ")"
	case step == "":
		return " (cause: " + words + ")"
	}
	return " (cause: " + words + ", at step " + step + ")"
}

// digestNote shows a gate round's digest, shortened.
func digestNote(digest string) string {
	if digest == "" {
		return ""
	}
	return " [digest " + shortHex(digest) + "]"
}

// shortHex is the first 12 characters of a digest: enough to compare
// with the one stratum gate show prints.
func shortHex(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// describeItemEvent renders a fanout item event.
func describeItemEvent(typ engine.EventType, step string, d engine.FanoutItemDetail) string {
	succeeded := d.Success != nil && *d.Success
	switch typ {
	case engine.EventFanoutItemReady:
		return fmt.Sprintf("%s[%d]: item ready", step, d.ItemIndex)
	case engine.EventFanoutItemDispatch:
		return fmt.Sprintf("%s[%d]: stage %d dispatched (attempt %d)", step, d.ItemIndex, deref(d.Stage)+1, deref(d.Attempt))
	case engine.EventFanoutAttemptResult:
		if succeeded {
			return fmt.Sprintf("%s[%d]: stage %d attempt %d accepted", step, d.ItemIndex, deref(d.Stage)+1, deref(d.Attempt))
		}
		reason := ""
		if d.Failure != nil {
			reason = OneLine(d.Failure.Reason)
		}
		return fmt.Sprintf("%s[%d]: stage %d attempt %d rejected: %s", step, d.ItemIndex, deref(d.Stage)+1, deref(d.Attempt), reason)
	case engine.EventFanoutItemSkipped:
		return fmt.Sprintf("%s[%d]: stage %d skipped", step, d.ItemIndex, deref(d.Stage)+1)
	}
	if succeeded {
		return fmt.Sprintf("%s[%d]: merged", step, d.ItemIndex)
	}
	return fmt.Sprintf("%s[%d]: merge failed: %s", step, d.ItemIndex, OneLine(d.Reason))
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// OneLine folds a multi-line reason into one line for a progress view
// (stratum audit's step lines use it too).
func OneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// maxClip bounds how much of a judged statement an event line shows.
const maxClip = 48

// clip is s on one line, cut to maxClip runes.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > maxClip {
		return string(r[:maxClip-3]) + "..."
	}
	return s
}
