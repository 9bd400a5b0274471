package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/stratum-go/stratum/agent"
	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/ir"
)

// Dispatcher runs the items of engine-dispatched fanouts with agent
// connectors: it is the one engine.Dispatcher of the module, used by
// `stratum run` (through a Driver) and by `stratum mcp`. It runs one agent
// task in the directory and with the sandbox the engine chose; worktrees
// and merging are the engine's.
type Dispatcher struct {
	resolver *agent.Resolver
	override string
}

// NewDispatcher returns a Dispatcher. override is the --agent value (empty
// lets each stage's agent: decide); a nil resolver is a zero
// agent.Resolver (claude, codex and commands; no human).
func NewDispatcher(resolver *agent.Resolver, override string) *Dispatcher {
	if resolver == nil {
		resolver = &agent.Resolver{}
	}
	return &Dispatcher{resolver: resolver, override: override}
}

// Dispatch implements engine.Dispatcher. The agent's misbehaviour is a
// result with Failure set; the error is non-nil only when the connector
// cannot run: an agent that cannot run at all (missing, not logged in, no
// network) wraps engine.ErrAgentUnavailable, so the engine pauses the
// fanout instead of charging an attempt.
func (x *Dispatcher) Dispatch(ctx context.Context, req engine.DispatchRequest) (engine.DispatchResult, error) {
	conn, err := x.resolver.Resolve(x.override, req.Agent)
	if err != nil {
		if errors.Is(err, agent.ErrNotFound) || errors.Is(err, agent.ErrUnavailable) {
			return engine.DispatchResult{}, fmt.Errorf("%w: %w", engine.ErrAgentUnavailable, err)
		}
		return engine.DispatchResult{}, err
	}
	res, err := conn.Run(ctx, agent.Request{RunID: req.RunID, StepID: req.StepID + "/" + strconv.Itoa(req.ItemIndex),
		Task: req.Prompt, Agent: req.Agent, Attempt: req.Attempt, Contract: agentContract(req.Plan, req.Contract),
		PreviousFailure: failureOf(req.PreviousFailure), Workdir: req.Workdir, Sandbox: sandboxOf(req.Sandbox)})
	if errors.Is(err, agent.ErrUnavailable) {
		return engine.DispatchResult{}, fmt.Errorf("%w: %w", engine.ErrAgentUnavailable, err)
	}
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
		out.Telemetry = &engine.Telemetry{DurationMs: float64(t.DurationMs), Model: modelOf(t.Model)}
	}
	return out, nil
}

func sandboxOf(s string) string {
	if s == engine.SandboxWorkspaceWrite {
		return agent.SandboxWorkspaceWrite
	}
	return agent.SandboxReadOnly
}

func modelOf(m string) string {
	if m = strings.TrimSpace(m); m != "" {
		return m
	}
	return "unknown"
}

// runEntry runs one attempt of a ready do step or consumer fanout item.
// The error is non-nil only when the attempt could not run at all (the
// agent's program is missing, the context ended): the run is left as it
// is for a later resume.
func (d *Driver) runEntry(ctx context.Context, r *run, entry engine.ReadyEntry) (agent.Result, []byte, error) {
	conn, err := d.resolver.Resolve(d.opts.Agent, entry.Agent)
	if err != nil {
		return agent.Result{}, nil, err
	}
	req := agent.Request{RunID: r.id, StepID: entry.ID, Task: entry.Do, Agent: entry.Agent, Attempt: entry.Attempt,
		Contract: agentContract(d.planOf(r.id), entry.Contract), PreviousFailure: failureOf(entry.PreviousFailure),
		Workdir: r.workspace, Sandbox: agent.SandboxReadOnly}
	it := entry.FanoutItem
	if it == nil || it.Policy.Isolation != string(ir.IsolationWorktree) {
		res, err := conn.Run(ctx, req)
		return res, nil, err
	}
	// A consumer item with worktree isolation: the driver is its consumer
	// and owns its worktree (see consumer.go).
	wt, err := d.consumer.acquire(ctx, r.workspace, r.id, it.Step, entry.Epoch, it.ItemIndex, d.notice)
	if err != nil {
		// The item cannot be isolated: a failed attempt, like any agent
		// failure, so the engine's retry rules apply.
		return agent.Result{Failure: err.Error()}, nil, nil
	}
	req.Workdir, req.Sandbox = wt.Workdir, agent.SandboxWorkspaceWrite
	res, err := conn.Run(ctx, req)
	if err != nil || res.Failure != "" || !it.IsFinalStage {
		return res, nil, err
	}
	patch, err := d.consumer.capture(ctx, r.id, it.Step, entry.Epoch, it.ItemIndex)
	if err != nil {
		return agent.Result{Failure: err.Error(), Telemetry: res.Telemetry}, nil, nil
	}
	if patch == nil {
		patch = []byte{} // captured, no changes: still the engine's to record
	}
	return res, patch, nil
}

// agentContract converts the engine's view of an output contract into the
// agents' one, fields in declaration order when the plan is known (else
// sorted by name), the root contract first, then the others by name.
func agentContract(plan *ir.Plan, c *engine.Contract) *agent.Contract {
	if c == nil {
		return nil
	}
	out := contractOf(plan, c, c.Root)
	names := make([]string, 0, len(c.Contracts))
	for name := range c.Contracts {
		if name != c.Root {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		out.Contracts = append(out.Contracts, *contractOf(plan, c, name))
	}
	return out
}

func contractOf(plan *ir.Plan, c *engine.Contract, name string) *agent.Contract {
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
func usageOf(u *agent.Usage) json.RawMessage {
	if u == nil {
		return nil
	}
	b, _ := json.Marshal(struct {
		Tokens float64  `json:"tokens"`
		USD    *float64 `json:"usd,omitempty"`
	}{u.Tokens, u.USD}) // numbers only: cannot fail
	return b
}

// telemetryOf is an attempt's telemetry in step_done's form.
func telemetryOf(t *agent.Telemetry) json.RawMessage {
	if t == nil {
		return nil
	}
	b, _ := json.Marshal(engine.Telemetry{DurationMs: float64(t.DurationMs), Model: modelOf(t.Model)}) // cannot fail
	return b
}

// outputOf is an agent's output (the expr value model) as JSON, in its
// own key order.
func outputOf(v any) (json.RawMessage, error) {
	return expr.EncodeJSON(v)
}
