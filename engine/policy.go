package engine

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/ir"
)

// The effects policy (docs/policy.md): a spec is written by a model and
// may carry a prompt injection, so it never decides what Stratum does on
// the machine. Every effect a spec can cause is named by an Effect; the
// Policy of whoever started Stratum allows or refuses each, before a run
// is planned (nothing is persisted or run for a refused spec) and again
// when the effect is about to happen (a run planned elsewhere under a
// looser policy is held to this process's one).

// EffectKind names a kind of effect a spec can cause.
type EffectKind string

// The effects a spec can cause.
const (
	// EffectCommand: a shell command runs (an evaluate step, a fanout's
	// pre_merge).
	EffectCommand EffectKind = "command"
	// EffectAgent: an agent CLI is started by the engine (the items of an
	// engine-dispatched fanout).
	EffectAgent EffectKind = "agent"
	// EffectFileRead: an expression reads files of the workspace
	// (file_exists, file_contains).
	EffectFileRead EffectKind = "file_read"
	// EffectJudge: a judge is asked (a judged ensure).
	EffectJudge EffectKind = "judge"
)

// Effect is one effect a step of a spec can cause.
type Effect struct {
	Kind EffectKind `json:"kind"`
	// StepID is the id of the step that causes it, within Flow.
	StepID string `json:"stepId"`
	// Flow is the flow the step belongs to.
	Flow string `json:"flow"`
	// Command is the command of EffectCommand.
	Command string `json:"command,omitempty"`
	// Timeout is the declared time limit of an evaluate command.
	Timeout time.Duration `json:"timeoutMs,omitempty"`
	// Agent and Sandbox are the agent an EffectAgent starts and how much
	// it may change (read-only, or workspace-write in a worktree).
	Agent   string `json:"agent,omitempty"`
	Sandbox string `json:"sandbox,omitempty"`
	// Origin says what starts the agent of an EffectAgent when it is not
	// a fanout item: a do step of a background run, or an agent run a
	// client asked for (StepID and Flow are then empty).
	Origin EffectOrigin `json:"origin,omitempty"`
}

// EffectOrigin says what starts an agent besides a spec's fanout.
type EffectOrigin string

// What can start an agent.
const (
	// OriginFanout (the zero value): an item of an engine-dispatched
	// fanout.
	OriginFanout EffectOrigin = ""
	// OriginBackground: a do step of a background run (the server does
	// the step the client would otherwise do).
	OriginBackground EffectOrigin = "background"
	// OriginAgentRun: an agent run a client asked for
	// (stratum_agent_run).
	OriginAgentRun EffectOrigin = "agent_run"
)

func (f Effect) String() string {
	if f.Origin == OriginAgentRun {
		return fmt.Sprintf("the agent run starts the %s agent (%s)", f.Agent, f.Sandbox)
	}
	where := fmt.Sprintf("step %q of flow %q", f.StepID, f.Flow)
	switch f.Kind {
	case EffectCommand:
		return fmt.Sprintf("%s runs the command %q", where, f.Command)
	case EffectAgent:
		return fmt.Sprintf("%s starts the %s agent (%s)", where, f.Agent, f.Sandbox)
	case EffectFileRead:
		return where + " reads workspace files"
	case EffectJudge:
		return where + " asks a judge"
	}
	return where + " causes " + string(f.Kind)
}

// Policy is what the person who started Stratum allows runs to do. The
// engine asks it at plan time for every effect of the spec and for the
// workspace root, and again before each command or agent it starts.
type Policy interface {
	// Allow refuses an effect: the error says what would allow it (the
	// flag or the policy file line), in words for a model and a person.
	Allow(Effect) error
	// Workspace refuses a workspace root (absolute and clean) that is
	// not inside the roots the person allowed; clientRoots are the roots
	// the MCP client declared for its session, if any. An admitted root
	// comes with its anchor: the allowed directory it lies inside, with no
	// symbolic link between them, through which file functions open it
	// later (so a root replaced after plan cannot lead out; docs/policy.md,
	// "The workspace jail"). The anchor may be "" (no jail beyond the root).
	Workspace(root string, clientRoots []string) (anchor string, err error)
}

// ErrEffectNotAllowed: the spec needs an effect the policy forbids.
// Nothing was persisted or run.
var ErrEffectNotAllowed = errors.New("effect not allowed")

// CodeEffectNotAllowed is ErrEffectNotAllowed's code.
const CodeEffectNotAllowed = "effect_not_allowed"

// SpecEffects lists every effect a compiled spec can cause, in the
// declaration order of flows and steps: what the policy is asked about at plan time and what
// `stratum validate --policy` reports.
func SpecEffects(p *ir.Plan) []Effect {
	var out []Effect
	for _, f := range p.Flows {
		for _, s := range f.Steps {
			out = append(out, stepEffects(f, s)...)
		}
	}
	return out
}

// stepEffects lists the effects of one step.
func stepEffects(f *ir.Flow, s *ir.Step) []Effect {
	base := Effect{StepID: s.ID, Flow: f.Name}
	var out []Effect
	add := func(e Effect) { out = append(out, e) }
	exprs := []string{}
	if s.HasWhen {
		exprs = append(exprs, s.When)
	}
	ensures := s.Ensure
	switch s.Kind {
	case ir.KindEvaluate:
		e := base
		e.Kind, e.Command, e.Timeout = EffectCommand, s.Evaluate.Command, time.Duration(s.Evaluate.TimeoutMS)*time.Millisecond
		add(e)
	case ir.KindDo:
		if s.Iterate != nil {
			exprs = append(exprs, s.Iterate.Until)
		}
	case ir.KindFanout:
		engineItems := s.Fanout.Dispatch != ir.DispatchConsumer
		sandbox := SandboxReadOnly
		if s.Fanout.Isolation == ir.IsolationWorktree {
			sandbox = SandboxWorkspaceWrite
		}
		seen := map[string]bool{}
		for _, stage := range s.Fanout.Stages {
			if stage.HasWhen {
				exprs = append(exprs, stage.When)
			}
			ensures = append(ensures[:len(ensures):len(ensures)], stage.Ensure...)
			if a := agentOf(string(stage.Agent)); engineItems && !seen[a] {
				seen[a] = true
				e := base
				e.Kind, e.Agent, e.Sandbox = EffectAgent, a, sandbox
				add(e)
			}
		}
		if s.Fanout.Isolation == ir.IsolationWorktree {
			for _, cmd := range s.Fanout.PreMerge {
				e := base
				e.Kind, e.Command = EffectCommand, cmd
				add(e)
			}
		}
	}
	judged := false
	for _, en := range ensures {
		if en.Kind == ir.EnsureJudged {
			judged = true
			continue
		}
		exprs = append(exprs, en.Expression())
	}
	if readsFiles(exprs) {
		e := base
		e.Kind = EffectFileRead
		add(e)
	}
	if judged {
		e := base
		e.Kind = EffectJudge
		add(e)
	}
	return out
}

// readsFiles reports whether any expression calls a file function.
func readsFiles(srcs []string) bool {
	for _, src := range srcs {
		if p, err := expr.Compile(src); err == nil && p.UsesFileFunctions() {
			return true
		}
	}
	return false
}

// checkPolicy refuses a plan whose spec needs an effect the policy
// forbids, listing every refused effect.
func (e *Engine) checkPolicy(p *ir.Plan) error {
	if e.opts.Policy == nil {
		return nil
	}
	var msgs []string
	var first error
	for _, f := range SpecEffects(p) {
		if err := e.opts.Policy.Allow(f); err != nil {
			if first == nil {
				first = err
			}
			msgs = append(msgs, err.Error())
		}
	}
	if first == nil {
		return nil
	}
	return &Error{Kind: ErrEffectNotAllowed, Err: first,
		Message: "the spec needs effects this server does not allow (nothing was planned): " + strings.Join(msgs, "; ")}
}

// allowNow asks the policy about an effect that is about to happen: the
// run may have been planned by a process with a looser policy.
func (t *txn) allowNow(f Effect) error {
	if t.e.opts.Policy == nil {
		return nil
	}
	return t.e.opts.Policy.Allow(f)
}
