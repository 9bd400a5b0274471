package driver

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/stratum-go/stratum/agent"
	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/internal/lease"
	"github.com/stratum-go/stratum/store"
)

// AgentRuns runs free-form agent tasks (claude or codex) for a client,
// outside any flow's steps (docs/agents.md, "Agent runs for a client"):
// in the foreground (the call waits for the answer) or detached. Every
// run is recorded in its own store (the agent-run store, separate from
// the runs of flows; docs/decisions/0141-agent-runs-in-a-store.md): its
// status, the tail of what the agent reported, its usage and exit code,
// and the process record that lets any process on the machine stop it.
// So a detached run is polled, and any run cancelled, from any process,
// also after the server that started it restarted; a run tagged with a
// flow is cancelled with that flow and its usage is receipted on it.
//
// While a process runs an agent it holds the record's lease (the same
// leases as the runs of flows): a record still running whose lease
// nobody holds belonged to a server that died (its agent died with it).
type AgentRuns struct {
	st       store.Store
	e        *engine.Engine
	policy   engine.Policy
	resolver *agent.Resolver
	opts     AgentRunOptions

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu   sync.Mutex
	live map[string]*liveRun
}

// AgentRunOptions configure AgentRuns.
type AgentRunOptions struct {
	// Timeout is each run's time limit (the agent's process group is
	// stopped at it); zero means none.
	Timeout time.Duration
	// CancelWait bounds how long a cancel waits for an agent to be torn
	// down; zero means 15 seconds.
	CancelWait time.Duration
	// Resolver finds the CLIs; nil is a zero agent.Resolver.
	Resolver *agent.Resolver
	// Log receives notices; nil discards them.
	Log *slog.Logger
}

// liveRun is an agent run this process executes.
type liveRun struct {
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// NewAgentRuns returns the agent runs of st (the agent-run store), tagged
// flows being the runs of e, effects asked of policy (nil allows any).
func NewAgentRuns(st store.Store, e *engine.Engine, policy engine.Policy, opts AgentRunOptions) *AgentRuns {
	if opts.CancelWait <= 0 {
		opts.CancelWait = 15 * time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	r := opts.Resolver
	if r == nil {
		r = &agent.Resolver{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &AgentRuns{st: st, e: e, policy: policy, resolver: r, opts: opts, ctx: ctx, cancel: cancel, live: map[string]*liveRun{}}
}

// Close stops the agents this process runs (their records say cancelled:
// the server stopped) and waits for them.
func (a *AgentRuns) Close() {
	a.cancel()
	a.wg.Wait()
}

// AgentRunRequest is one agent run a client asked for.
type AgentRunRequest struct {
	// Agent is claude or codex.
	Agent  string
	Prompt string
	// Cwd is the agent's working directory: an existing directory inside
	// the roots the policy allows.
	Cwd string
	// Options are the reference's options: Model, Effort, Sandbox
	// (read-only or workspace-write), AllowedTools, DisallowedTools,
	// Thinking. Progress and Started are set by AgentRuns.
	Options agent.Options
	// Background detaches the run: Run returns once the agent started.
	Background bool
	// CancellationID (foreground only) is the run's id, chosen by the
	// client so that it can cancel the call from elsewhere: a UUID,
	// usable once.
	CancellationID string
	// Flow tags the run with a flow run (its usage is receipted on it,
	// and cancelling the flow cancels the agent).
	Flow *FlowTag
	// ClientRoots are the client's declared roots (the policy may accept
	// a cwd inside them).
	ClientRoots []string
	// Progress receives each progress line of a foreground run.
	Progress func(line string)
}

// FlowTag names the flow run (and optionally its step) an agent run
// works for.
type FlowTag struct {
	RunID     string `json:"runId" jsonschema:"the flow run the agent works for"`
	StepID    string `json:"stepId,omitzero" jsonschema:"the step it works for (recorded; its usage is receipted on that step when it exists)"`
	ItemIndex *int   `json:"itemIndex,omitzero" jsonschema:"the fanout item it works for (recorded)"`
}

// Agent-run statuses.
const (
	AgentRunning  = "running"
	AgentComplete = "complete"
	// AgentFailed: the agent ran and failed (what it reported, a non-zero
	// exit, the time limit), or the server running it stopped first.
	AgentFailed    = "failed"
	AgentCancelled = "cancelled"
)

// AgentRunError is a refusal of an agent-run call, with a stable code:
// invalid_arguments (Path names the argument), flow_not_running,
// flow_admission_failed, effect_not_allowed (wrapping the policy's
// refusal), agent_run_failed.
type AgentRunError struct {
	Code    string
	Path    string
	Message string
	Err     error
}

func (e *AgentRunError) Error() string { return e.Message }
func (e *AgentRunError) Unwrap() error { return e.Err }

// Codes of AgentRunError.
const (
	CodeInvalidArguments    = "invalid_arguments"
	CodeFlowNotRunning      = "flow_not_running"
	CodeFlowAdmissionFailed = "flow_admission_failed"
	CodeAgentRunFailed      = "agent_run_failed"
)

// AgentRunView is what is known of an agent run: the answer of a
// foreground run (status complete or error), of a detached start
// (running), of a poll and of a cancel.
type AgentRunView struct {
	Status string `json:"status" jsonschema:"running, complete, failed or cancelled (not_found: no such agent run)"`
	RunID  string `json:"runId" jsonschema:"the agent run's id: poll it with stratum_agent_poll, cancel it with stratum_cancel_agent_run"`
	Agent  string `json:"agent" jsonschema:"claude or codex"`
	// Text is the agent's final message (complete).
	Text string `json:"text,omitzero" jsonschema:"the agent's final message (complete)"`
	// TextTail is the end of what the agent reported so far (running,
	// failed, cancelled).
	TextTail   string        `json:"textTail,omitzero" jsonschema:"the end of what the agent reported while it worked (its last lines)"`
	EventsSeen int           `json:"eventsSeen,omitzero" jsonschema:"how many progress events the agent reported"`
	StderrTail string        `json:"stderrTail,omitzero" jsonschema:"the end of the agent's standard error"`
	Reason     string        `json:"reason,omitzero" jsonschema:"why it failed or was cancelled"`
	ExitCode   *int          `json:"exitCode,omitzero" jsonschema:"the CLI's exit status (-1: ended by a signal)"`
	Usage      *RunUsage     `json:"usage,omitzero" jsonschema:"what the run used"`
	Telemetry  *RunTelemetry `json:"telemetry,omitzero" jsonschema:"how the run went: duration, model, effort"`
	Pid        int           `json:"pid,omitzero" jsonschema:"the agent's process (group) id"`
	Flow       *FlowTag      `json:"flow,omitzero" jsonschema:"the flow run the agent works for"`
	StartedAt  time.Time     `json:"startedAt" jsonschema:"when the agent started (RFC 3339)"`
	FinishedAt *time.Time    `json:"finishedAt,omitzero" jsonschema:"when it finished (RFC 3339)"`
}

// RunUsage is what an agent run used.
type RunUsage struct {
	Ms        float64   `json:"ms" jsonschema:"wall time in milliseconds, measured by Stratum"`
	Tokens    float64   `json:"tokens" jsonschema:"tokens read and written (0 when the CLI reported none)"`
	USD       *float64  `json:"usd,omitzero" jsonschema:"cost in US dollars, when the CLI reported one"`
	USDSource string    `json:"usdSource,omitzero" jsonschema:"reported, when usd is set"`
	Split     *RunSplit `json:"split,omitzero" jsonschema:"the tokens by kind, when the CLI reported them"`
}

// RunSplit breaks an agent run's tokens down.
type RunSplit struct {
	Input         float64 `json:"input" jsonschema:"input tokens (without cache reads and writes)"`
	Output        float64 `json:"output" jsonschema:"output tokens"`
	CacheRead     float64 `json:"cacheRead,omitzero" jsonschema:"cache read tokens"`
	CacheCreation float64 `json:"cacheCreation,omitzero" jsonschema:"cache write tokens"`
}

// RunTelemetry describes how an agent run went.
type RunTelemetry struct {
	DurationMs int64  `json:"durationMs" jsonschema:"wall time in milliseconds"`
	Model      string `json:"model" jsonschema:"the model the agent reported (or the configured one, or unknown)"`
	Effort     string `json:"effort,omitzero" jsonschema:"the reasoning effort asked for"`
}

func runUsage(u *agent.Usage) *RunUsage {
	if u == nil {
		return nil
	}
	r := &RunUsage{Ms: u.Ms, Tokens: u.Tokens, USD: u.USD, USDSource: u.USDSource}
	if s := u.Split; s != nil {
		r.Split = &RunSplit{Input: s.Input, Output: s.Output, CacheRead: s.CacheRead, CacheCreation: s.CacheCreation}
	}
	return r
}

func runTelemetry(t *agent.Telemetry) *RunTelemetry {
	if t == nil {
		return nil
	}
	return &RunTelemetry{DurationMs: t.DurationMs, Model: modelOf(t.Model), Effort: t.Effort}
}

// agentRecord is an agent run's state document in the agent-run store.
type agentRecord struct {
	Format     string               `json:"format"`
	View       AgentRunView         `json:"view"`
	Background bool                 `json:"background"`
	Cwd        string               `json:"cwd"`
	Owner      string               `json:"owner"`
	Process    *agent.ProcessRecord `json:"process,omitempty"`
	// CancelRequested: a cancel asked the owner to stop the agent.
	CancelRequested bool `json:"cancelRequested,omitempty"`
}

const agentRecordFormat = "stratum.agent-run.v1"

// agentSummary is the store summary of a record (what a flow's cancel
// reads for every agent run without loading them).
type agentSummary struct {
	Status string `json:"status"`
	Flow   string `json:"flow,omitempty"`
}

// Agent-run events (in the agent-run store).
const (
	evAgentStarted         = "agent_run.started"
	evAgentProgress        = "agent_run.progress"
	evAgentFinished        = "agent_run.finished"
	evAgentCancelRequested = "agent_run.cancel_requested"
)

// maxTextTail bounds the text tail kept in a record.
const maxTextTail = 4 << 10

// progressEvery is how often a detached run's text tail is written.
const progressEvery = time.Second

var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// Run runs an agent: in the foreground it returns the finished run
// (status complete, or error with the reason); detached it returns once
// the agent's process started (status running). A run that could not
// start is an *AgentRunError.
func (a *AgentRuns) Run(ctx context.Context, req AgentRunRequest) (*AgentRunView, error) {
	runner, err := a.check(ctx, &req)
	if err != nil {
		return nil, err
	}
	id := req.CancellationID
	if id == "" {
		id = newRunID()
	}
	now := time.Now().UTC()
	rec := &agentRecord{Format: agentRecordFormat, Background: req.Background, Cwd: req.Cwd, Owner: a.e.Owner(),
		View: AgentRunView{Status: AgentRunning, RunID: id, Agent: req.Agent, Flow: req.Flow, StartedAt: now}}
	if err := a.create(ctx, rec); err != nil {
		return nil, err
	}
	keeper, err := lease.Acquire(ctx, a.st, id, a.e.Owner(), a.e.LeaseTTL())
	if err != nil {
		a.finish(id, nil, &agent.TaskResult{Failure: "could not take the run's lease: " + err.Error()}, err)
		return nil, &AgentRunError{Code: CodeAgentRunFailed, Message: "agent run: " + err.Error(), Err: err}
	}
	runCtx, cancel := context.WithCancelCause(a.ctx)
	if !req.Background {
		// The call's end (the client cancelled it) stops a foreground run.
		stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
		defer stop()
	}
	lr := &liveRun{cancel: cancel, done: make(chan struct{})}
	a.mu.Lock()
	a.live[id] = lr
	a.mu.Unlock()

	tail := newTextTail()
	opts := req.Options
	opts.Timeout = a.opts.Timeout
	opts.Progress = func(line string) {
		tail.add(line)
		if req.Progress != nil {
			req.Progress(line)
		}
	}
	task := agent.Task{Prompt: req.Prompt, Workdir: req.Cwd, Options: opts}
	d, err := agent.StartTask(runCtx, runner, task)
	if err != nil {
		a.release(id, lr, keeper)
		a.finish(id, nil, &agent.TaskResult{Failure: err.Error()}, err)
		cancel(nil)
		return nil, agentStartError(req.Agent, err)
	}
	proc := d.Record()
	a.started(id, proc)
	// Admitted again now that it runs: a flow cancelled meanwhile
	// cancels the agent at once.
	if req.Flow != nil {
		if err := a.admit(ctx, req.Flow); err != nil {
			d.Cancel()
			res, _ := d.Wait()
			a.release(id, lr, keeper)
			a.finish(id, &proc, &res, context.Canceled)
			return nil, err
		}
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer cancel(nil)
		a.follow(id, d, tail, lr, keeper, req.Flow)
	}()
	if req.Background {
		v := rec.View
		v.Pid = proc.Pid
		return &v, nil
	}
	select {
	case <-lr.done:
	case <-ctx.Done():
		<-lr.done // the run was cancelled with the call: wait for its teardown
	}
	return a.view(context.WithoutCancel(ctx), id)
}

// check validates a request against the reference's rules and the
// effects policy, and admits a tagged flow.
func (a *AgentRuns) check(ctx context.Context, req *AgentRunRequest) (agent.TaskRunner, error) {
	bad := func(path, format string, args ...any) error {
		return &AgentRunError{Code: CodeInvalidArguments, Path: path, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case req.Agent != "claude" && req.Agent != "codex":
		return nil, bad("agent", "agent must be claude or codex, not %q", req.Agent)
	case strings.TrimSpace(req.Prompt) == "":
		return nil, bad("prompt", "prompt is empty: say what the agent should do")
	case req.Cwd == "":
		return nil, bad("cwd", "cwd is required: the directory the agent works in")
	}
	o := req.Options
	switch o.Sandbox {
	case "":
		o.Sandbox = agent.SandboxReadOnly
	case agent.SandboxReadOnly, agent.SandboxWorkspaceWrite:
	default:
		return nil, bad("sandboxMode", "sandboxMode must be read-only or workspace-write, not %q", o.Sandbox)
	}
	req.Options = o
	if err := o.Validate(req.Agent); err != nil {
		return nil, bad("options", "%v", err)
	}
	if req.Agent == "codex" && o.Effort != "" && o.Model != "" {
		// A model named with an effort suffix ("gpt-5-codex-high") must
		// agree with an explicit effort.
		for _, e := range []string{"minimal", "low", "medium", "high", "xhigh"} {
			if strings.HasSuffix(o.Model, "-"+e) && e != o.Effort {
				return nil, bad("effort", "effort %q disagrees with the model %q, whose name says %s", o.Effort, o.Model, e)
			}
		}
	}
	if req.CancellationID != "" {
		if req.Background {
			return nil, bad("cancellationId", "cancellationId is only supported for foreground runs: a detached run's runId is its handle")
		}
		if !uuidPattern.MatchString(req.CancellationID) {
			return nil, bad("cancellationId", "cancellationId must be a UUID (8-4-4-4-12 hexadecimal digits)")
		}
		req.CancellationID = strings.ToLower(req.CancellationID)
	}
	if a.policy != nil {
		if err := a.policy.Allow(engine.Effect{Kind: engine.EffectAgent, Agent: req.Agent, Sandbox: o.Sandbox, Origin: engine.OriginAgentRun}); err != nil {
			return nil, &AgentRunError{Code: engine.CodeEffectNotAllowed, Message: err.Error(), Err: err}
		}
		if _, err := a.policy.Workspace(req.Cwd, req.ClientRoots); err != nil {
			return nil, &AgentRunError{Code: CodeInvalidArguments, Path: "cwd", Message: "cwd refused: " + err.Error(), Err: err}
		}
	}
	if req.Flow != nil {
		if err := a.admit(ctx, req.Flow); err != nil {
			return nil, err
		}
	}
	runner, err := a.resolver.TaskRunner(req.Agent)
	if err != nil {
		return nil, bad("agent", "%v", err)
	}
	return runner, nil
}

// admit checks that a tagged flow is running (spec: flow admission).
func (a *AgentRuns) admit(ctx context.Context, tag *FlowTag) error {
	if tag.RunID == "" {
		return &AgentRunError{Code: CodeInvalidArguments, Path: "flow.runId", Message: "flow.runId is required"}
	}
	resp, err := a.e.Status(ctx, tag.RunID)
	switch {
	case errors.Is(err, engine.ErrRunNotFound):
		return &AgentRunError{Code: CodeFlowNotRunning, Message: fmt.Sprintf("flow %s does not exist", tag.RunID), Err: err}
	case err != nil:
		return &AgentRunError{Code: CodeFlowAdmissionFailed, Message: fmt.Sprintf("flow %s cannot be read: %v", tag.RunID, err), Err: err}
	case resp.Status != engine.StatusRunning && resp.Status != engine.StatusReady:
		return &AgentRunError{Code: CodeFlowNotRunning, Message: fmt.Sprintf("flow %s is %s: an agent can only work for a running flow", tag.RunID, resp.Status)}
	}
	return nil
}

// agentStartError reports an agent that could not start.
func agentStartError(name string, err error) error {
	return &AgentRunError{Code: CodeAgentRunFailed, Message: fmt.Sprintf("the %s agent could not start: %v", name, err), Err: err}
}

// follow waits for a started run, keeps its record's text tail current
// (detached runs) and records how it ended.
func (a *AgentRuns) follow(id string, d *agent.Detached, tail *textTail, lr *liveRun, keeper *lease.Keeper, tag *FlowTag) {
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	written := 0
	lost := keeper.Lost()
	for {
		select {
		case <-d.Done():
			res, err := d.Wait()
			proc := d.Record()
			a.finish(id, &proc, &res, err)
			if tag != nil && res.Usage != nil {
				a.receipt(id, tag, &res)
			}
			a.release(id, lr, keeper)
			return
		case <-lost:
			// The record's lease could not be renewed in time: this
			// process can no longer say how the run ends. Stop the agent.
			lost = nil
			d.Cancel()
		case <-tick.C:
			text, n := tail.get()
			if n != written {
				written = n
				a.update(id, evAgentProgress, func(r *agentRecord) { r.View.TextTail, r.View.EventsSeen = text, n })
			}
			if a.cancelRequested(id) {
				d.Cancel()
			}
		}
	}
}

// release forgets a live run and gives its record's lease up.
func (a *AgentRuns) release(id string, lr *liveRun, keeper *lease.Keeper) {
	a.mu.Lock()
	if a.live[id] == lr {
		delete(a.live, id)
	}
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = keeper.Release(ctx)
	close(lr.done)
}

// receipt records a tagged run's usage on its flow, on its step when the
// step exists (idempotent by the run's id).
func (a *AgentRuns) receipt(id string, tag *FlowTag, res *agent.TaskResult) {
	u := res.Usage
	usage := map[string]any{"ms": u.Ms, "tokens": u.Tokens}
	usdSource := ""
	if u.USD != nil {
		usage["usd"] = *u.USD
		usdSource = "reported"
	}
	ub, _ := json.Marshal(usage)
	var tb json.RawMessage
	if t := res.Telemetry; t != nil {
		tb, _ = json.Marshal(map[string]any{"durationMs": t.DurationMs, "model": modelOf(t.Model)})
	}
	rc := engine.Receipt{DispatchID: "agent_run:" + id, StepID: tag.StepID, Source: "agent_run", Usage: ub, Telemetry: tb, USDSource: usdSource}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := a.e.UsageReport(ctx, tag.RunID, rc)
	if errors.Is(err, engine.ErrInvalidStep) {
		rc.StepID = ""
		_, err = a.e.UsageReport(ctx, tag.RunID, rc)
	}
	if err != nil {
		a.opts.Log.Warn("agent run: usage not receipted on its flow", "agentRun", id, "flow", tag.RunID, "err", err)
	}
}

// create stores a new record; a cancellationId used before is refused.
func (a *AgentRuns) create(ctx context.Context, rec *agentRecord) error {
	doc, sum, err := encodeRecord(rec)
	if err != nil {
		return err
	}
	data, _ := json.Marshal(map[string]any{"agent": rec.View.Agent, "background": rec.Background, "owner": rec.Owner, "flow": rec.View.Flow})
	_, err = a.st.Create(ctx, rec.View.RunID, store.Change{State: doc, Summary: sum,
		Events: []store.NewEvent{{Type: evAgentStarted, At: rec.View.StartedAt, Data: data}}})
	if errors.Is(err, store.ErrRunExists) {
		return &AgentRunError{Code: CodeInvalidArguments, Path: "cancellationId", Message: "cancellationId " + rec.View.RunID + " has already been used: pick a new UUID", Err: err}
	}
	if err != nil {
		return &AgentRunError{Code: CodeAgentRunFailed, Message: "agent run: record: " + err.Error(), Err: err}
	}
	return nil
}

func encodeRecord(rec *agentRecord) (doc, sum []byte, err error) {
	doc, err = json.Marshal(rec)
	if err != nil {
		return nil, nil, err
	}
	s := agentSummary{Status: rec.View.Status}
	if rec.View.Flow != nil {
		s.Flow = rec.View.Flow.RunID
	}
	sum, err = json.Marshal(s)
	return doc, sum, err
}

// update changes a record with one event (nothing when fn leaves it as
// it was). Failures are logged: a record that could not be updated keeps
// its earlier state.
func (a *AgentRuns) update(id, event string, fn func(r *agentRecord)) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.updateCtx(ctx, id, event, fn); err != nil {
		a.opts.Log.Warn("agent run: record not updated", "agentRun", id, "err", err)
	}
}

func (a *AgentRuns) updateCtx(ctx context.Context, id, event string, fn func(r *agentRecord)) error {
	_, err := a.st.Update(ctx, id, func(cur *store.Snapshot) (*store.Change, error) {
		var r agentRecord
		if err := json.Unmarshal(cur.State, &r); err != nil {
			return nil, fmt.Errorf("agent run %s: %w", id, err)
		}
		before, _ := json.Marshal(&r)
		fn(&r)
		doc, sum, err := encodeRecord(&r)
		if err != nil || string(doc) == string(before) {
			return nil, err
		}
		data, _ := json.Marshal(map[string]any{"status": r.View.Status})
		return &store.Change{State: doc, Summary: sum, Events: []store.NewEvent{{Type: event, At: time.Now(), Data: data}}}, nil
	})
	return err
}

// started records the agent's process.
func (a *AgentRuns) started(id string, proc agent.ProcessRecord) {
	a.update(id, evAgentProgress, func(r *agentRecord) {
		r.Process = &proc
		r.View.Pid = proc.Pid
	})
}

// finish records how a run ended. A run cancelled (here or from another
// process) stays cancelled.
func (a *AgentRuns) finish(id string, proc *agent.ProcessRecord, res *agent.TaskResult, err error) {
	a.update(id, evAgentFinished, func(r *agentRecord) {
		if r.View.Status != AgentRunning {
			return
		}
		now := time.Now().UTC()
		v := &r.View
		v.FinishedAt = &now
		if proc != nil {
			r.Process = proc
		}
		if res != nil {
			code := res.ExitCode
			if proc != nil {
				v.ExitCode = &code
			}
			v.Usage, v.Telemetry, v.StderrTail = runUsage(res.Usage), runTelemetry(res.Telemetry), res.Stderr
		}
		switch {
		case r.CancelRequested || errors.Is(err, agent.ErrCancelled) || errors.Is(err, context.Canceled):
			v.Status, v.Reason = AgentCancelled, "cancelled"
			if a.ctx.Err() != nil && !r.CancelRequested {
				v.Reason = "the server running it stopped"
			}
		case err != nil:
			v.Status, v.Reason = AgentFailed, err.Error()
		case res.Failure != "":
			v.Status, v.Reason = AgentFailed, res.Failure
			v.TextTail = tailOf(res.Text)
		default:
			v.Status, v.Text, v.TextTail = AgentComplete, res.Text, ""
		}
	})
}

// view reads a run's record as an answer. A record still running whose
// lease nobody holds belonged to a server that died.
func (a *AgentRuns) view(ctx context.Context, id string) (*AgentRunView, error) {
	rec, snap, err := a.load(ctx, id)
	if err != nil {
		return nil, err
	}
	v := rec.View
	if v.Status == AgentRunning && snap.Lease == nil {
		v.Status, v.Reason = AgentFailed, "the server running it stopped before it finished (its agent stopped with it)"
	}
	return &v, nil
}

// load reads a record; an unknown id is ErrRunNotFound.
func (a *AgentRuns) load(ctx context.Context, id string) (*agentRecord, *store.Snapshot, error) {
	if err := store.ValidateRunID(id); err != nil {
		return nil, nil, fmt.Errorf("agent run %q: %w", id, store.ErrRunNotFound)
	}
	snap, err := a.st.Load(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	var rec agentRecord
	if err := json.Unmarshal(snap.State, &rec); err != nil || rec.Format != agentRecordFormat {
		return nil, nil, fmt.Errorf("agent run %s: not an agent-run record", id)
	}
	return &rec, snap, nil
}

// Poll reads an agent run. An unknown id answers status not_found.
func (a *AgentRuns) Poll(ctx context.Context, id string) (*AgentRunView, error) {
	v, err := a.view(ctx, strings.ToLower(id))
	if errors.Is(err, store.ErrRunNotFound) {
		return &AgentRunView{Status: "not_found", RunID: id}, nil
	}
	return v, err
}

// cancelRequested reports whether another process asked for a cancel.
func (a *AgentRuns) cancelRequested(id string) bool {
	rec, _, err := a.load(context.Background(), id)
	return err == nil && rec.CancelRequested
}

// Cancel stops an agent run from any process, and waits (up to
// AgentRunOptions.CancelWait) for its process group to be gone. The
// answer's status is cancelled, or the status the run had already
// reached (complete, error), or not_found.
func (a *AgentRuns) Cancel(ctx context.Context, id string) (*AgentRunView, CancelOutcome, error) {
	id = strings.ToLower(id)
	rec, snap, err := a.load(ctx, id)
	if errors.Is(err, store.ErrRunNotFound) {
		return &AgentRunView{Status: "not_found", RunID: id}, CancelOutcome{}, nil
	}
	if err != nil {
		return nil, CancelOutcome{}, err
	}
	if rec.View.Status != AgentRunning {
		return &rec.View, CancelOutcome{AlreadySettled: 1}, nil
	}
	var out CancelOutcome
	a.mu.Lock()
	lr := a.live[id]
	a.mu.Unlock()
	wait, cancel := context.WithTimeout(ctx, a.opts.CancelWait)
	defer cancel()
	if err := a.updateCtx(wait, id, evAgentCancelRequested, func(r *agentRecord) { r.CancelRequested = true }); err != nil {
		return nil, out, &AgentRunError{Code: CodeAgentRunFailed, Message: "agent run " + id + ": cancel: " + err.Error(), Err: err}
	}
	switch {
	case lr != nil:
		// This process runs it: stop it and wait for the teardown.
		lr.cancel(agent.ErrCancelled)
		out.Signalled++
		select {
		case <-lr.done:
			out.Reaped++
		case <-wait.Done():
			out.Unreaped++
		}
	case rec.Process != nil:
		// Another process (or a dead one) ran it: stop its group here,
		// if it still runs (the record's identity is checked).
		how, kerr := agent.Kill(wait, *rec.Process)
		switch {
		case kerr != nil:
			out.Unreachable++
		case how == agent.KillGone:
			out.Gone++
		default:
			out.Signalled++
			out.Reaped++
		}
		if snap.Lease != nil && kerr == nil {
			// Its owner records the end once it sees the agent exit;
			// wait for that.
			a.awaitSettled(wait, id)
		}
	default:
		out.Gone++
	}
	// Settle it here if its owner did not (it died, or it is elsewhere).
	a.update(id, evAgentFinished, func(r *agentRecord) {
		if r.View.Status == AgentRunning {
			now := time.Now().UTC()
			r.View.Status, r.View.Reason, r.View.FinishedAt = AgentCancelled, "cancelled", &now
		}
	})
	v, err := a.view(context.WithoutCancel(ctx), id)
	return v, out, err
}

// awaitSettled waits until a record is no longer running.
func (a *AgentRuns) awaitSettled(ctx context.Context, id string) {
	for {
		rec, _, err := a.load(ctx, id)
		if err != nil || rec.View.Status != AgentRunning {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// CancelOutcome counts what a cancel did to agent processes.
type CancelOutcome struct {
	Signalled, Reaped, Gone, Unreachable, AlreadySettled, Unreaped int
}

// CancelFlow cancels every running agent run tagged with a flow run,
// from any process (stratum_flow_cancel), and counts what it did.
func (a *AgentRuns) CancelFlow(ctx context.Context, flowRunID string) (engine.AgentSummary, error) {
	var sum engine.AgentSummary
	infos, err := a.st.List(ctx)
	if err != nil {
		return sum, err
	}
	for _, info := range infos {
		var s agentSummary
		if json.Unmarshal(info.Summary, &s) != nil || s.Flow != flowRunID || s.Status != AgentRunning {
			continue
		}
		_, out, err := a.Cancel(ctx, info.ID)
		if err != nil {
			sum.Unresolved++
			continue
		}
		sum.Signalled += out.Signalled
		sum.Reaped += out.Reaped
		sum.Gone += out.Gone
		sum.Unreachable += out.Unreachable
		sum.AlreadySettled += out.AlreadySettled
		sum.Unreaped += out.Unreaped
	}
	return sum, nil
}

// textTail keeps the last lines an agent reported.
type textTail struct {
	mu    sync.Mutex
	lines []string
	size  int
	n     int
}

func newTextTail() *textTail { return &textTail{} }

func (t *textTail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n++
	t.lines = append(t.lines, line)
	t.size += len(line) + 1
	for t.size > maxTextTail && len(t.lines) > 1 {
		t.size -= len(t.lines[0]) + 1
		t.lines = t.lines[1:]
	}
}

func (t *textTail) get() (string, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return tailOf(strings.Join(t.lines, "\n")), t.n
}

// tailOf is the end of s, at most maxTextTail bytes, from a line start
// when one is near.
func tailOf(s string) string {
	if len(s) <= maxTextTail {
		return s
	}
	s = s[len(s)-maxTextTail:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < 256 {
		s = s[i+1:]
	}
	return strings.ToValidUTF8(s, "")
}

// newRunID is a random UUID (version 4) for an agent run.
func newRunID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand panics on an unusable source)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
