package driver

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/stratum-go/stratum/agent"
	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/ir"
)

// runEntry runs one attempt of a ready do step or consumer fanout item.
// The error is non-nil only when the attempt could not run at all (the
// agent's program is missing, the context ended): the run is left as it
// is for a later resume.
func (d *Driver) runEntry(ctx context.Context, runID, workspace string, entry engine.ReadyEntry) (agent.Result, error) {
	conn, err := d.resolver.Resolve(d.opts.Agent, entry.Agent)
	if err != nil {
		return agent.Result{}, err
	}
	req := agent.Request{RunID: runID, StepID: entry.ID, Task: entry.Do, Agent: entry.Agent, Attempt: entry.Attempt,
		Contract: d.contract(d.planOf(runID), entry.Contract), PreviousFailure: failureOf(entry.PreviousFailure),
		Workdir: workspace, Sandbox: agent.SandboxReadOnly}
	var wt *worktree
	if it := entry.Item; it != nil && it.Policy.Isolation == "worktree" {
		wt, err = d.worktrees.acquire(ctx, workspace, runID, it.Step, it.ItemIndex, d.notice)
		if err != nil {
			// The item cannot be isolated: a failed attempt, like any
			// agent failure, so the engine's retry rules apply.
			return agent.Result{Failure: err.Error()}, nil
		}
		req.Workdir, req.Sandbox = wt.workdir, agent.SandboxWorkspaceWrite
	}
	res, err := conn.Run(ctx, req)
	if err != nil {
		return agent.Result{}, err
	}
	if wt != nil && res.Failure == "" {
		if err := wt.capture(ctx); err != nil {
			return agent.Result{Failure: err.Error(), Telemetry: res.Telemetry}, nil
		}
	}
	return res, nil
}

// dispatcher runs engine-dispatched fanout items (engine.Dispatcher).
type dispatcher struct{ d *Driver }

func (x *dispatcher) Dispatch(ctx context.Context, req engine.DispatchRequest) (engine.DispatchResult, error) {
	d := x.d
	conn, err := d.resolver.Resolve(d.opts.Agent, req.Agent)
	if err != nil {
		return engine.DispatchResult{}, err
	}
	areq := agent.Request{RunID: req.RunID, StepID: req.StepID + "/" + strconv.Itoa(req.ItemIndex), Task: req.Prompt,
		Agent: req.Agent, Attempt: req.Attempt, Contract: d.contract(d.planOf(req.RunID), req.Contract), PreviousFailure: failureOf(req.PreviousFailure),
		Workdir: req.Workdir, Sandbox: agent.SandboxReadOnly}
	var wt *worktree
	if req.Isolation == "worktree" {
		wt, err = d.worktrees.acquire(ctx, req.Workdir, req.RunID, req.StepID, req.ItemIndex, d.notice)
		if err != nil {
			return engine.DispatchResult{Failure: err.Error()}, nil
		}
		areq.Workdir, areq.Sandbox = wt.workdir, agent.SandboxWorkspaceWrite
	}
	res, err := conn.Run(ctx, areq)
	if err != nil {
		return engine.DispatchResult{}, err
	}
	out := engine.DispatchResult{Output: res.Output, Failure: res.Failure}
	if u := res.Usage; u != nil {
		out.Usage.Tokens = u.Tokens
		if u.USD != nil {
			out.Usage.USD = *u.USD
		}
	}
	if t := res.Telemetry; t != nil {
		out.Telemetry = &engine.Telemetry{DurationMs: float64(t.DurationMs), Model: t.Model}
	}
	if wt != nil && res.Failure == "" {
		if err := wt.capture(ctx); err != nil {
			out.Output, out.Failure = nil, err.Error()
		}
	}
	return out, nil
}

// onEvent acts on the events that concern worktrees: a fanout's result
// merges (success) or discards (failure) its items' worktrees; a revise
// reset discards them (the items run again).
func (r *run) onEvent(ctx context.Context, ev engine.Event) error {
	if ev.StepID == "" || !r.d.worktrees.has(r.id, ev.StepID) {
		return nil
	}
	switch ev.Type {
	case "step_reset":
		r.d.worktrees.discard(context.WithoutCancel(ctx), r.id, ev.StepID, r.d.notice)
	case "result":
		var detail struct {
			Failure json.RawMessage `json:"failure"`
		}
		_ = json.Unmarshal(ev.Detail, &detail)
		if len(detail.Failure) > 0 && string(detail.Failure) != "null" {
			r.d.worktrees.discard(context.WithoutCancel(ctx), r.id, ev.StepID, r.d.notice)
			return nil
		}
		return r.merge(ctx, ev.StepID)
	}
	return nil
}

// merge applies the changes of a settled fanout's succeeded items to the
// workspace, in item order, after its pre_merge commands (spec/engine.md
// 5.4.2). A merge that fails cancels the run: the steps after the fanout
// must not run on a half-merged workspace.
func (r *run) merge(ctx context.Context, stepID string) error {
	a, err := r.e.Audit(ctx, r.id)
	if err != nil {
		return &HaltError{RunID: r.id, Err: err}
	}
	st := a.Steps[stepID]
	var succeeded []int
	if st != nil && st.Fanout != nil {
		for _, it := range st.Fanout.Items {
			if it.Status == engine.StepSucceeded {
				succeeded = append(succeeded, it.Index)
			}
		}
	}
	var preMerge []string
	if p := r.d.planOf(r.id); p != nil {
		if f := p.Flow(a.Flow); f != nil {
			if s := f.Step(stepID); s != nil && s.Fanout != nil {
				preMerge = s.Fanout.PreMerge
			}
		}
	}
	merr := r.d.worktrees.merge(context.WithoutCancel(ctx), r.workspace, r.id, stepID, preMerge, succeeded, r.d.notice)
	r.d.worktrees.discard(context.WithoutCancel(ctx), r.id, stepID, r.d.notice)
	if merr == nil {
		return nil
	}
	reason := fmt.Sprintf("fanout %s merge failed: %v", stepID, merr)
	r.d.notice(reason + "; cancelling the run")
	if _, err := r.e.Cancel(ctx, r.id, reason); err != nil {
		return &HaltError{RunID: r.id, StepID: stepID, Err: fmt.Errorf("%s; cancelling the run failed too: %w", reason, err)}
	}
	return r.refresh(ctx)
}

// contract converts the engine's view of an output contract into the
// agents' one, fields in declaration order when the plan is known.
func (d *Driver) contract(plan *ir.Plan, c *engine.Contract) *agent.Contract {
	if c == nil {
		return nil
	}
	out := agentContract(plan, c, c.Root)
	names := make([]string, 0, len(c.Contracts))
	for name := range c.Contracts {
		if name != c.Root {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		out.Contracts = append(out.Contracts, *agentContract(plan, c, name))
	}
	return out
}

func agentContract(plan *ir.Plan, c *engine.Contract, name string) *agent.Contract {
	raw := c.Contracts[name]
	out := &agent.Contract{Name: name, Fields: make([]agent.Field, 0, len(raw))}
	var decl *ir.Contract
	if plan != nil {
		decl = plan.Contract(name)
	}
	seen := map[string]bool{}
	if decl != nil {
		for _, f := range decl.Fields {
			if t, ok := raw[f.Name]; ok {
				out.Fields = append(out.Fields, agent.Field{Name: f.Name, Type: t})
				seen[f.Name] = true
			}
		}
	}
	var rest []string
	for field := range raw {
		if !seen[field] {
			rest = append(rest, field)
		}
	}
	sort.Strings(rest)
	for _, field := range rest {
		out.Fields = append(out.Fields, agent.Field{Name: field, Type: raw[field]})
	}
	return out
}

func failureOf(f *engine.Failure) *agent.Failure {
	if f == nil {
		return nil
	}
	return &agent.Failure{Attempt: f.Attempt, Reason: f.Reason}
}

// usageOf is an agent's reported usage in step_done's form: {tokens, usd}.
func usageOf(u *agent.Usage) any {
	if u == nil {
		return nil
	}
	m := map[string]any{"tokens": u.Tokens}
	if u.USD != nil {
		m["usd"] = *u.USD
	}
	return m
}

// telemetryOf is an attempt's telemetry in step_done's form.
func telemetryOf(t *agent.Telemetry) any {
	if t == nil {
		return nil
	}
	model := strings.TrimSpace(t.Model)
	if model == "" {
		model = "unknown"
	}
	return map[string]any{"durationMs": float64(t.DurationMs), "model": model}
}
