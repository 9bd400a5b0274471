package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/stratum-go/stratum/agent"
	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/ir"
)

// Dispatcher runs the items of engine-dispatched fanouts with agent
// connectors: it is the one engine.Dispatcher of the module, used by
// `stratum run` (through a Driver) and by `stratum mcp`. It runs one agent
// task in the directory the engine chose, with the person's agent options
// (an item in a worktree may write it); worktrees and merging are the
// engine's.
type Dispatcher struct {
	resolver *agent.Resolver
	override string
	agents   AgentSetup
}

// NewDispatcher returns a Dispatcher. override is the --agent value (empty
// lets each stage's agent: decide); a nil resolver is a zero
// agent.Resolver (claude, codex and commands; no human). Its agents run
// with default options until WithAgents says otherwise.
func NewDispatcher(resolver *agent.Resolver, override string) *Dispatcher {
	if resolver == nil {
		resolver = &agent.Resolver{}
	}
	return &Dispatcher{resolver: resolver, override: override}
}

// WithAgents returns a copy of x whose agents run as s configures them.
// Call it before the Dispatcher is given to an engine.
func (x *Dispatcher) WithAgents(s AgentSetup) *Dispatcher {
	y := *x
	y.agents = s
	return &y
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
	id := req.StepID + "/" + strconv.Itoa(req.ItemIndex)
	areq := agent.Request{RunID: req.RunID, StepID: id,
		Task: req.Prompt, Agent: req.Agent, Attempt: req.Attempt, Contract: agentContract(req.Plan, req.Contract),
		PreviousFailure: failureOf(req.PreviousFailure), Workdir: req.Workdir,
		Options: x.agents.forAttempt(req.StepID, id)}
	if req.Sandbox == engine.SandboxWorkspaceWrite {
		areq.Sandbox = agent.SandboxWorkspaceWrite // the item's own worktree
	}
	res, err := conn.Run(ctx, areq)
	x.agents.showStderr(conn, id, res)
	if errors.Is(err, agent.ErrUnavailable) {
		return engine.DispatchResult{}, fmt.Errorf("%w: %w", engine.ErrAgentUnavailable, err)
	}
	if err != nil {
		return engine.DispatchResult{}, err
	}
	return engine.DispatchResult{Output: res.Output, Failure: res.Failure, Usage: ledgerOf(res.Usage),
		Telemetry: engineTelemetry(res.Telemetry), Stderr: res.Stderr}, nil
}

// runEntry runs one attempt of a ready do step or consumer fanout item.
// The error is non-nil only when the attempt could not run at all (the
// agent cannot run, the context ended): the run is left as it is for a
// later resume.
func (d *Driver) runEntry(ctx context.Context, r *run, entry engine.ReadyEntry) (res agent.Result, patch []byte, changes *engine.Changes, err error) {
	conn, err := d.resolver.Resolve(d.opts.Agent, entry.Agent)
	if err != nil {
		return agent.Result{}, nil, nil, err
	}
	step := entry.ID
	if entry.FanoutItem != nil {
		step = entry.FanoutItem.Step
	}
	req := agent.Request{RunID: r.id, StepID: entry.ID, Task: entry.Do, Agent: entry.Agent, Attempt: entry.Attempt,
		Contract: agentContract(d.planOf(r.id), entry.Contract), PreviousFailure: failureOf(entry.PreviousFailure),
		Workdir: r.workspace, Options: d.opts.Agents.forAttempt(step, entry.ID), Revision: revisionOf(entry.Revision)}
	if in := entry.Interrupted; in != nil {
		req.Interrupted = fmt.Sprintf("An earlier attempt of this step, started at %s by %s, was interrupted before it reported: it may have left changes.",
			in.At.Format(time.RFC3339), in.By)
	}
	// Recorded before the agent starts: if this process dies while the
	// agent works, a resume knows the attempt was interrupted and never
	// hands it to a second agent without saying so.
	who := d.opts.Agent
	if who == "" {
		who = entry.Agent
	}
	it := entry.FanoutItem
	inWorkspace := it == nil || it.Policy.Isolation != string(ir.IsolationWorktree)
	var measured func(context.Context) *engine.Changes
	if inWorkspace {
		// What a do step changes in the workspace is measured (consumer
		// items only count as working there: their changes are theirs).
		measured = r.changes.start(ctx, entry.ID, it == nil)
	}
	if err := r.e.AttemptStarted(ctx, r.id, entry.ID, entry.DispatchToken, d.opts.By+" (agent "+who+")"); err != nil {
		if measured != nil {
			measured(ctx)
		}
		return agent.Result{}, nil, nil, err
	}
	defer func() { d.opts.Agents.showStderr(conn, entry.ID, res) }()
	if inWorkspace {
		res, err := conn.Run(ctx, req)
		var changes *engine.Changes
		if ch := measured(ctx); err == nil {
			changes = ch
		}
		return res, nil, changes, err
	}
	// A consumer item with worktree isolation: the driver is its consumer
	// and owns its worktree (see consumer.go).
	wt, err := d.consumer.acquire(ctx, r.workspace, r.id, it.Step, entry.Epoch, it.ItemIndex, d.notice)
	if err != nil {
		// The item cannot be isolated: a failed attempt, like any agent
		// failure, so the engine's retry rules apply.
		return agent.Result{Failure: err.Error()}, nil, nil, nil
	}
	req.Workdir, req.Sandbox = wt.Workdir, agent.SandboxWorkspaceWrite
	res, err = conn.Run(ctx, req)
	if err != nil || res.Failure != "" || !it.IsFinalStage {
		return res, nil, nil, err
	}
	patch, err = d.consumer.capture(ctx, r.id, it.Step, entry.Epoch, it.ItemIndex)
	if err != nil {
		return agent.Result{Failure: err.Error(), Usage: res.Usage, Telemetry: res.Telemetry, Stderr: res.Stderr}, nil, nil, nil
	}
	if patch == nil {
		patch = []byte{} // captured, no changes: still the engine's to record
	}
	return res, patch, nil, nil
}

// revisionOf is a gate's revise request in the agents' terms.
func revisionOf(r *engine.Revision) *agent.Revision {
	if r == nil {
		return nil
	}
	return &agent.Revision{Gate: r.Gate, Round: r.Round, Note: r.Note, ResolvedBy: r.ResolvedBy, SentBack: r.SentBack.Data}
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

// outputOf is an agent's output (the expr value model) as JSON, in its
// own key order.
func outputOf(v any) (json.RawMessage, error) {
	return expr.EncodeJSON(v)
}
