package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/stratum-go/stratum/engine"
)

// eventDetail holds the detail members the progress lines show; events
// carry a subset of them (spec/engine.md 8.3).
type eventDetail struct {
	Attempt   *int            `json:"attempt"`
	Result    json.RawMessage `json:"result"`
	Output    json.RawMessage `json:"output"`
	Failure   *eventFailure   `json:"failure"`
	Reason    string          `json:"reason"`
	Target    *string         `json:"target"`
	Decision  string          `json:"decision"`
	ItemIndex *int            `json:"itemIndex"`
	Stage     *int            `json:"stage"`
	Success   *bool           `json:"success"`
	Iterate   *struct {
		Iteration int `json:"iteration"`
		Max       int `json:"max"`
	} `json:"iterate"`
	Rationale  string `json:"rationale"`
	ResolvedBy string `json:"resolvedBy"`
	Statement  string `json:"statement"`
	Holds      *bool  `json:"holds"`
	Name       string `json:"name"`
	Label      string `json:"label"`
	Flow       string `json:"flow"`
	Burned     *struct {
		Steps []string `json:"steps"`
		Items int      `json:"items"`
	} `json:"burned"`
}

// eventFailure is a failure in an event detail: {attempt, reason} for a
// step, {kind, reason} for a fanout item attempt.
type eventFailure struct {
	Attempt int    `json:"attempt"`
	Kind    string `json:"kind"`
	Reason  string `json:"reason"`
}

// describeEvent renders one event as a short line for a person: what
// happened, to which step, and why when something failed. It returns ""
// for bookkeeping events (ledger debits) that a progress view leaves out.
func describeEvent(ev engine.Event) string {
	var d eventDetail
	if len(ev.Detail) > 0 {
		_ = json.Unmarshal(ev.Detail, &d) // a detail of another shape shows less, never fails
	}
	step := ev.StepID
	attempt := 0
	if d.Attempt != nil {
		attempt = *d.Attempt
	}
	switch ev.Type {
	case "planned":
		if d.Flow != "" {
			return "planned flow " + d.Flow
		}
		return "planned"
	case "ready":
		return fmt.Sprintf("%s: ready (attempt %d)", step, attempt)
	case "result":
		if d.Failure != nil {
			return fmt.Sprintf("%s: attempt %d rejected: %s", step, attempt, oneLine(d.Failure.Reason))
		}
		if d.Iterate != nil {
			return fmt.Sprintf("%s: attempt %d accepted (iteration %d of at most %d)", step, attempt, d.Iterate.Iteration, d.Iterate.Max)
		}
		return fmt.Sprintf("%s: attempt %d accepted", step, attempt)
	case "judged":
		verdict := "does not hold"
		if d.Holds != nil && *d.Holds {
			verdict = "holds"
		}
		return fmt.Sprintf("%s: judged %q %s: %s", step, clip(d.Statement), verdict, oneLine(d.Reason))
	case "routed":
		target := ""
		if d.Target != nil {
			target = *d.Target
		}
		reason := ""
		if d.Failure != nil {
			reason = ": " + oneLine(d.Failure.Reason)
		}
		return fmt.Sprintf("%s: failed, routed to %s%s", step, target, reason)
	case "skipped":
		if d.Reason != "" {
			return fmt.Sprintf("%s: skipped (%s)", step, d.Reason)
		}
		return step + ": skipped"
	case "gate_waiting":
		return step + ": gate waiting for a decision"
	case "gate_resolved":
		s := fmt.Sprintf("%s: gate resolved: %s", step, d.Decision)
		if d.Target != nil && *d.Target != "" {
			s += " -> " + *d.Target
		}
		// Who decided and why is what an audit reader looks for.
		switch {
		case d.ResolvedBy != "" && d.Rationale != "":
			s += fmt.Sprintf(" (by %s: %s)", oneLine(d.ResolvedBy), oneLine(d.Rationale))
		case d.ResolvedBy != "":
			s += fmt.Sprintf(" (by %s)", oneLine(d.ResolvedBy))
		case d.Rationale != "":
			s += fmt.Sprintf(" (%s)", oneLine(d.Rationale))
		}
		return s
	case "step_reset":
		return step + ": reset for a revision"
	case "fanout_item_ready":
		return fmt.Sprintf("%s[%d]: item ready", step, deref(d.ItemIndex))
	case "fanout_item_dispatched":
		return fmt.Sprintf("%s[%d]: stage %d dispatched (attempt %d)", step, deref(d.ItemIndex), deref(d.Stage)+1, attempt)
	case "fanout_attempt_result":
		if d.Success != nil && *d.Success {
			return fmt.Sprintf("%s[%d]: stage %d attempt %d accepted", step, deref(d.ItemIndex), deref(d.Stage)+1, attempt)
		}
		reason := ""
		if d.Failure != nil {
			reason = oneLine(d.Failure.Reason)
		}
		return fmt.Sprintf("%s[%d]: stage %d attempt %d rejected: %s", step, deref(d.ItemIndex), deref(d.Stage)+1, attempt, reason)
	case "fanout_item_skipped":
		return fmt.Sprintf("%s[%d]: stage %d skipped", step, deref(d.ItemIndex), deref(d.Stage)+1)
	case "fanout_merge":
		if d.Success != nil && *d.Success {
			return fmt.Sprintf("%s[%d]: merged", step, deref(d.ItemIndex))
		}
		return fmt.Sprintf("%s[%d]: merge failed: %s", step, deref(d.ItemIndex), oneLine(d.Reason))
	case "fanout_ledger_debit", "usage_debit":
		return ""
	case "carry_updated":
		return fmt.Sprintf("carry %s updated (%s)", d.Name, d.Reason)
	case "checkpoint_committed":
		return "checkpoint " + d.Label + " committed"
	case "checkpoint_reverted":
		return "reverted to checkpoint " + d.Label
	case "resumed":
		return "resumed"
	case "completed":
		return "completed"
	case "failed":
		return "failed: " + oneLine(d.Reason)
	case "budget_exhausted":
		return "budget exhausted: " + oneLine(d.Reason)
	case "flow_cancelled":
		if d.Reason != "" {
			return "cancelled: " + oneLine(d.Reason)
		}
		return "cancelled"
	}
	if step != "" {
		return step + ": " + ev.Type
	}
	return ev.Type
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// oneLine folds a multi-line reason into one line for a progress view.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
