package cli

import (
	"context"
	"flag"
	"fmt"
	"sort"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/ir"
	"github.com/stratum-go/stratum/store"
)

// queryCmd is "stratum query flows|flow RUN|gates": read persisted runs.
type queryCmd struct{}

func (*queryCmd) Name() string     { return "query" }
func (*queryCmd) Synopsis() string { return "flows | flow RUN | gates" }
func (*queryCmd) Short() string {
	return "list runs, show one run, or list the gates awaiting a decision"
}
func (*queryCmd) Long() string {
	return `Query reads the persisted runs of the state root ($STRATUM_HOME/flows, or
$STRATUM_STATE_ROOT) and prints JSON (two-space indented):

  query flows      one summary per run, newest first:
                   {_schema_version, flow_id, flow_name, status, current_step_id,
                    step_count, completed_steps, round, terminal_status, synthetic}
  query flow RUN   the summary of RUN plus ordered_steps: [{id, function, mode,
                   status, task?}] in declaration order (function is a do step's
                   do template, task what it was given, rendered; mode is gate
                   or step)
  query gates      every gate awaiting a decision, in every running run:
                   {_schema_version, flow_id, flow_name, step_id, function,
                    on_approve, on_revise, on_kill, timeout, gate_token, round,
                    max_rounds, revises_left, kind, digest, under_review}
                   round is how many revisions the gate's flow has had,
                   max_rounds the effective limit (the smaller of the flow's
                   and the gate's own), revises_left how many more revise
                   decisions the gate can take (0: a revise fails the run);
                   kind is gate, or interrupted for a do step whose attempt
                   died (approve runs it again); digest is what stratum gate
                   --digest takes; under_review lists the steps the gate
                   follows: [{step_id, status, task, output,
                   output_truncated?, changes?: {changed, stat, patch_bytes,
                   head_before, head_after}, items?: [{index, patch_bytes}]}]
                   (task rendered; output cut at 8 KiB; stratum gate show
                   RUN STEP prints the same for a person)

status is complete, failed, killed (a gate's kill ended the run),
budget_exhausted, cancelled, awaiting_gate or running; terminal_status is the
run's own status once it has finished (null while it runs).

A run that cannot be read is skipped with a message on stderr.

Exit status: 0 printed; 1 with {"error": {"code", "message"}} on stdout for
an unknown RUN (NOT_FOUND) or an id that cannot be a run id (INVALID);
2 for a usage error.`
}

func (*queryCmd) SetFlags(*flag.FlagSet) {}

func (c *queryCmd) Run(ctx context.Context, env *Env, args []string) error {
	switch {
	case len(args) == 0:
		return usagef("expected flows, flow RUN or gates")
	case args[0] == "flow" && len(args) != 2:
		return usagef("query flow takes one RUN id (\"stratum query flows\" lists them)")
	case (args[0] == "flows" || args[0] == "gates") && len(args) != 1:
		return usagef("query %s takes no arguments, got %q", args[0], args[1:])
	case args[0] != "flows" && args[0] != "flow" && args[0] != "gates":
		return usagef("unknown query %q: expected flows, flow RUN or gates", args[0])
	}
	if args[0] == "flows" {
		defer relaxGC()()
	}
	sys, err := openSystem(env, systemConfig{})
	if err != nil {
		return fail(env, "INVALID", err.Error())
	}
	defer sys.Close()
	e := sys.engine
	st := sys.store
	switch args[0] {
	case "flows":
		runs, err := e.ListRunsSeq(ctx)
		if err != nil {
			return fail(env, "INVALID", err.Error())
		}
		// From the runs' summaries: a listing never reads a run's log.
		for r := range runs {
			if r.Error != "" {
				fmt.Fprintf(env.Stderr, "stratum: unable to load persisted flow '%s': %s\n", r.RunID, r.Error)
			}
		}
		return writeFlows(env.Stdout, func(yield func(flowSummary) bool) {
			for r := range runs {
				if r.Error == "" && !yield(listedFlow(r)) {
					return
				}
			}
		})
	case "flow":
		id := args[1]
		if err := checkRunID(env, id); err != nil {
			return err
		}
		s, err := summarize(ctx, e, st, id)
		if isNotFound(err) {
			return fail(env, "NOT_FOUND", fmt.Sprintf("Flow '%s' not found", id))
		}
		if err != nil {
			return fail(env, engineCode(err), err.Error())
		}
		return writeJSON(env.Stdout, s)
	default:
		gates, err := e.ListGates(ctx, "")
		if err != nil {
			return fail(env, "INVALID", err.Error())
		}
		out := make([]gateSummary, 0, len(gates))
		views := map[string]map[string]engine.GateView{} // by run, by step
		for _, g := range gates {
			if _, ok := views[g.RunID]; !ok {
				views[g.RunID] = map[string]engine.GateView{}
				vs, err := e.GateViews(ctx, g.RunID)
				if err != nil {
					fmt.Fprintf(env.Stderr, "stratum: unable to read the gates of flow '%s': %v\n", g.RunID, err)
				}
				for _, v := range vs {
					views[g.RunID][v.StepID] = v
				}
			}
			v, ok := views[g.RunID][g.StepID]
			if !ok || v.GateToken != g.GateToken {
				continue // decided between the two reads
			}
			out = append(out, gateSummaryOf(v))
		}
		return writeJSON(env.Stdout, out)
	}
}

// gateSummaryOf is a gate view in the reference's query gates shape, with
// the additions (docs/cli.md, "stratum query").
func gateSummaryOf(v engine.GateView) gateSummary {
	g := v.WaitingGate
	s := gateSummary{
		SchemaVersion: schemaVersion, FlowID: g.RunID, FlowName: g.Flow, StepID: g.StepID, Function: g.StepID,
		OnApprove: nullable(g.OnApprove), OnRevise: nullable(g.OnRevise), OnKill: nullable(g.OnKill),
		GateToken: g.GateToken, Round: g.Round, MaxRounds: g.MaxRounds, RevisesLeft: g.RevisesLeft,
		Kind: g.Kind, Digest: g.Digest, UnderReview: make([]reviewSummary, 0, len(v.UnderReview)),
	}
	for _, r := range v.UnderReview {
		rs := reviewSummary{StepID: r.StepID, Status: r.Status, Task: r.Task, Output: r.Output, OutputTruncated: r.OutputTruncated}
		if c := r.WorkChanges; c != nil {
			rs.Changes = &changesSummary{Changed: changed(c), Stat: c.Stat, PatchBytes: c.PatchBytes, PatchOmitted: c.PatchOmitted, HeadBefore: c.HeadBefore, HeadAfter: c.HeadAfter}
		}
		for _, it := range r.Changes {
			rs.Items = append(rs.Items, itemChanges{Index: it.ItemIndex, PatchBytes: it.Bytes})
		}
		s.UnderReview = append(s.UnderReview, rs)
	}
	return s
}

type flowSummary struct {
	SchemaVersion  string  `json:"_schema_version"`
	FlowID         string  `json:"flow_id"`
	FlowName       string  `json:"flow_name"`
	Status         string  `json:"status"`
	CurrentStepID  *string `json:"current_step_id"`
	StepCount      int     `json:"step_count"`
	CompletedSteps int     `json:"completed_steps"`
	Round          int     `json:"round"`
	TerminalStatus *string `json:"terminal_status"`
	Synthetic      bool    `json:"synthetic"`
}

type flowDetail struct {
	flowSummary
	OrderedSteps []orderedStep   `json:"ordered_steps"`
	Failure      *engine.Failure `json:"failure,omitempty"`
	Output       engine.Value    `json:"output,omitzero"`
}

type orderedStep struct {
	ID       string            `json:"id"`
	Function string            `json:"function"`
	Mode     string            `json:"mode"`
	Status   engine.StepStatus `json:"status"`
	// Task is the rendered task (function is the spec's template): the
	// one handed out while the step is ready, else its last attempt's.
	Task string `json:"task,omitempty"`
}

type gateSummary struct {
	SchemaVersion string  `json:"_schema_version"`
	FlowID        string  `json:"flow_id"`
	FlowName      string  `json:"flow_name"`
	StepID        string  `json:"step_id"`
	Function      string  `json:"function"`
	OnApprove     *string `json:"on_approve"`
	OnRevise      *string `json:"on_revise"`
	OnKill        *string `json:"on_kill"`
	Timeout       *int    `json:"timeout"`
	GateToken     string  `json:"gate_token"`
	Round         int     `json:"round"`
	MaxRounds     int     `json:"max_rounds"`
	// The additions: how many more revisions the gate allows, gate or
	// interrupted, the digest of what is under review, and that.
	RevisesLeft int                `json:"revises_left"`
	Kind        engine.WaitingKind `json:"kind"`
	Digest      string             `json:"digest"`
	UnderReview []reviewSummary    `json:"under_review"`
}

// reviewSummary is one step under review in query gates.
type reviewSummary struct {
	StepID          string            `json:"step_id"`
	Status          engine.StepStatus `json:"status"`
	Task            string            `json:"task,omitempty"`
	Output          engine.Value      `json:"output,omitzero"`
	OutputTruncated bool              `json:"output_truncated,omitempty"`
	Changes         *changesSummary   `json:"changes,omitempty"`
	Items           []itemChanges     `json:"items,omitempty"`
}

// changesSummary is what a do step's accepted attempt changed.
type changesSummary struct {
	Changed    bool   `json:"changed"`
	Stat       string `json:"stat,omitempty"`
	PatchBytes int    `json:"patch_bytes"`
	// PatchOmitted: the patch was over the limit and was not kept.
	PatchOmitted bool   `json:"patch_omitted,omitempty"`
	HeadBefore   string `json:"head_before"`
	HeadAfter    string `json:"head_after"`
}

// itemChanges is the size of a worktree item's patch.
type itemChanges struct {
	Index      int `json:"index"`
	PatchBytes int `json:"patch_bytes"`
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// listedFlow is the query view of a run in a listing, from its summary.
// Its pointers are into r, not to copies (two allocations per run of a
// listing otherwise): r must outlive it, unchanged.
func listedFlow(r *engine.RunSummary) flowSummary {
	name := r.Flow
	if name == "" {
		name = r.RunID
	}
	s := flowSummary{SchemaVersion: schemaVersion, FlowID: r.RunID, FlowName: name,
		Status: projectedStatus(r.Status, r.FailureCause, r.GateWaits), StepCount: r.Steps, CompletedSteps: r.Done, Round: r.Rounds}
	if r.Status != engine.StatusRunning {
		s.TerminalStatus = (*string)(&r.Status)
	}
	if r.Current != "" {
		s.CurrentStepID = &r.Current
	}
	return s
}

// summarize builds the query view of one run (docs/cli.md, "stratum query").
func summarize(ctx context.Context, e *engine.Engine, st store.Store, runID string) (*flowDetail, error) {
	a, err := e.Audit(ctx, runID)
	if err != nil {
		return nil, err
	}
	// Without the spec the steps are listed by id, every one a "step"
	// whose function is its id.
	var flow *ir.Flow
	if plan, err := e.RunPlan(ctx, runID); err == nil {
		flow = plan.Flow(a.Flow)
	}
	name := a.Flow
	if name == "" {
		name = runID
	}
	d := &flowDetail{flowSummary: flowSummary{
		SchemaVersion: schemaVersion, FlowID: runID, FlowName: name,
		Status: projectStatus(a), Round: a.Rounds,
	}, Failure: a.Failure, Output: a.Output}
	if a.Status != engine.StatusRunning {
		s := string(a.Status)
		d.TerminalStatus = &s
	}
	var steps []orderedStep
	if flow != nil {
		for _, s := range flow.Steps {
			os := orderedStep{ID: s.ID, Function: s.ID, Mode: "step"}
			if s.Kind == ir.KindDo && s.Do != nil {
				os.Function = s.Do.Text
			}
			if s.Kind == ir.KindGate {
				os.Mode = "gate"
			}
			steps = append(steps, os)
		}
	} else {
		for id := range a.Steps {
			steps = append(steps, orderedStep{ID: id, Function: id, Mode: "step"})
		}
		sort.Slice(steps, func(i, j int) bool { return steps[i].ID < steps[j].ID })
	}
	d.StepCount = len(steps)
	d.OrderedSteps = make([]orderedStep, 0, len(steps))
	for _, os := range steps {
		os.Status = engine.StepPending
		if ss := a.Steps[os.ID]; ss != nil {
			os.Status = ss.Status
			os.Task = ss.Task
			for i := len(ss.Attempts) - 1; os.Task == "" && i >= 0; i-- {
				os.Task = ss.Attempts[i].Task
			}
		}
		if os.Status == engine.StepSucceeded || os.Status == engine.StepSkipped {
			d.CompletedSteps++
		}
		d.OrderedSteps = append(d.OrderedSteps, os)
	}
	if a.Status == engine.StatusRunning {
		for _, want := range []engine.StepStatus{engine.StepWaitingGate, engine.StepRunning, engine.StepReady, engine.StepPending} {
			for _, s := range d.OrderedSteps {
				if s.Status == want {
					id := s.ID
					d.CurrentStepID = &id
					break
				}
			}
			if d.CurrentStepID != nil {
				break
			}
		}
	}
	return d, nil
}

// projectStatus maps a run's status to the query vocabulary (docs/cli.md,
// "stratum query").
func projectStatus(a *engine.AuditReport) string {
	var cause engine.FailureCause
	if a.Failure != nil {
		cause = a.Failure.Cause
	}
	return projectedStatus(a.Status, cause, gateWaits(a.Steps))
}

func projectedStatus(status engine.RunStatus, cause engine.FailureCause, gateWaits bool) string {
	switch status {
	case engine.StatusCompleted:
		return "complete"
	case engine.StatusFailed:
		if cause == engine.CauseGateKilled {
			return "killed"
		}
		return "failed"
	case engine.StatusRunning:
		if gateWaits {
			return "awaiting_gate"
		}
		return "running"
	}
	return string(status)
}

func gateWaits(steps map[string]*engine.StepView) bool {
	for _, ss := range steps {
		if ss.Status == engine.StepWaitingGate || ss.Sub != nil && gateWaits(ss.Sub.Steps) {
			return true
		}
	}
	return false
}

// engineCode is the stable code of an engine error for a JSON error
// document.
func engineCode(err error) string {
	if code := engine.CodeOf(err); code != engine.CodeInternal {
		return code
	}
	return "INVALID"
}
