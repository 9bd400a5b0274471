package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/ir"
)

// What a person decides on (docs/engine.md, "Gates"): a waiting gate
// shows the steps it follows (its dependencies) with the task each was
// given and the output it produced, and, for a worktree fanout, the size
// of each item's captured changes. The digest of that content is recorded
// when the round begins (gate_waiting), shown in every gate view and
// recorded with the decision (gate_resolved); a decision that presents a
// digest is refused when the content it was made on is not the content
// under review, so an approval typed while looking at one round can
// never land on another.

// ReviewedStep is one step a gate follows, as the person deciding sees it.
type ReviewedStep struct {
	StepID string     `json:"stepId" jsonschema:"the step whose work is under review"`
	Status StepStatus `json:"status" jsonschema:"its status (succeeded, skipped, failed)"`
	Task   string     `json:"task,omitzero" jsonschema:"the task it was given, rendered"`
	// Output is the step's output, cut to MaxReviewOutput bytes of JSON
	// text in views (the digest covers all of it).
	Output          Value `json:"output,omitzero" jsonschema:"the output under review (cut when longer than the view's limit: see outputTruncated)"`
	OutputTruncated bool  `json:"outputTruncated,omitzero" jsonschema:"the output is longer than shown; stratum_audit has all of it"`
	// Changes are a worktree fanout's items' captured patches (sizes).
	Changes []ItemChanges `json:"changes,omitzero" jsonschema:"worktree fanout: each item's captured changes"`
	// WorkChanges are the workspace changes of a do step's accepted
	// attempt, when a driver measured them (stratum diff prints the patch).
	WorkChanges *Changes `json:"workChanges,omitzero" jsonschema:"the workspace changes the accepted attempt made (stat, patch size; stratum diff RUN STEP prints the patch)"`
}

// ItemChanges is the size of one worktree item's captured changes.
type ItemChanges struct {
	ItemIndex int `json:"itemIndex" jsonschema:"the item's index"`
	Bytes     int `json:"bytes" jsonschema:"the size of its patch in bytes (0: no changes)"`
}

// GateView is a waiting gate with everything a decision needs.
type GateView struct {
	WaitingGate
	// UnderReview are the steps the gate follows, in declaration order.
	UnderReview []ReviewedStep `json:"underReview" jsonschema:"the work under review: each step the gate follows, with its task and output"`
}

// MaxReviewOutput bounds the JSON text of one output in a gate view.
const MaxReviewOutput = 8 << 10

// underReview lists what a gate's round shows, in full.
func (t *txn) underReview(sc *scope, g *ir.Step) []ReviewedStep {
	out := make([]ReviewedStep, 0, len(g.Deps))
	for _, di := range g.Deps {
		d := sc.flow.Steps[di]
		st := sc.peek(d)
		if st == nil {
			continue
		}
		r := ReviewedStep{StepID: sc.scoped(d.ID), Status: st.Status, Output: st.Output}
		if n := len(st.Attempts); n > 0 {
			r.Task, r.WorkChanges = st.Attempts[n-1].Task, st.Attempts[n-1].Changes
		}
		if st.Fanout != nil && worktreeFanout(d) {
			for _, it := range st.Fanout.Items {
				if it.Status == StepSucceeded {
					r.Changes = append(r.Changes, ItemChanges{ItemIndex: it.Index, Bytes: it.PatchBytes})
				}
			}
		}
		out = append(out, r)
	}
	return out
}

// digestReview is the SHA-256 of the canonical JSON of what a round shows.
func digestReview(rs []ReviewedStep) string {
	h := sha256.New()
	for _, r := range rs {
		out, _ := expr.EncodeJSON(r.Output.Data) // a stored output always encodes
		fmt.Fprintf(h, "%q %s %q %d %s\n", r.StepID, r.Status, r.Task, len(r.Changes), out)
		for _, c := range r.Changes {
			fmt.Fprintf(h, "%d:%d\n", c.ItemIndex, c.Bytes)
		}
		if c := r.WorkChanges; c != nil {
			fmt.Fprintf(h, "changes %s %s %s %s %d\n", c.HeadBefore, c.HeadAfter, c.TreeBefore, c.TreeAfter, c.PatchBytes)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// forView cuts the outputs of a review to MaxReviewOutput.
func forView(rs []ReviewedStep) []ReviewedStep {
	for i := range rs {
		if !rs[i].Output.Present {
			continue
		}
		if b, err := expr.EncodeJSON(rs[i].Output.Data); err == nil && len(b) > MaxReviewOutput {
			rs[i].Output = Some(evidenceCut(string(b), MaxReviewOutput))
			rs[i].OutputTruncated = true
		}
	}
	return rs
}

// evidenceCut is the first n bytes of s at a rune boundary, marked.
func evidenceCut(s string, n int) string {
	for n > 0 && n < len(s) && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// GateViews returns the waiting gates of a run with everything a decision
// needs: the token, the round and the effective limit, what is under
// review (outputs cut to MaxReviewOutput) and its digest. Read-only.
func (e *Engine) GateViews(ctx context.Context, runID string) (_ []GateView, err error) {
	defer recoverLoad(&err)
	st, c, _, err := e.load(ctx, runID)
	if err != nil {
		return nil, err
	}
	t := newTxn(ctx, e, st, c)
	return t.gateViews(), nil
}

// gateViews lists the run's waiting gates with their review.
func (t *txn) gateViews() []GateView {
	out := []GateView{}
	if t.st.Status != StatusRunning || t.st.CancelRequested {
		return out
	}
	t.eachWaitingGate(func(sc *scope, s *ir.Step, ss *stepState, wg WaitingGate) {
		if wg.Kind == WaitInterrupted { // what was being done when it died
			out = append(out, GateView{WaitingGate: wg, UnderReview: []ReviewedStep{{StepID: wg.StepID, Status: ss.Status, Task: ss.Task}}})
			return
		}
		out = append(out, GateView{WaitingGate: wg, UnderReview: forView(t.underReview(sc, s))})
	})
	return out
}
