package policy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stratum-go/stratum/engine"
)

// Refusal is an effect the policy forbids: what, why, and what would
// allow it. It wraps engine.ErrEffectNotAllowed.
type Refusal struct {
	Effect engine.Effect
	// Why is the rule that forbids it.
	Why string
	// Allow says what would allow it: the flag or the policy-file line.
	Allow string
	// Instead is another way to reach the same goal, "" when none.
	Instead string
}

func (r *Refusal) Error() string {
	msg := r.Effect.String() + ": " + r.Why + "; to allow it, " + r.Allow
	if r.Instead != "" {
		msg += "; " + r.Instead
	}
	return msg
}

func (r *Refusal) Unwrap() error { return engine.ErrEffectNotAllowed }

// Allow implements engine.Policy.
func (p *Policy) Allow(f engine.Effect) error {
	refuse := func(why, allow, instead string) error {
		return &Refusal{Effect: f, Why: why, Allow: allow, Instead: instead}
	}
	switch f.Kind {
	case engine.EffectCommand:
		if !p.commands.value {
			return refuse(p.off(p.commands, "runs no commands"), p.enable(p.commands, "true"), "")
		}
		if f.Timeout > p.maxTimeout.value {
			return refuse(fmt.Sprintf("its timeout_ms %d (%s) is above the longest time limit %s allows (%s, %s)",
				f.Timeout.Milliseconds(), f.Timeout, p.command, p.maxTimeout.value, p.where(p.maxTimeout)),
				fmt.Sprintf("lower timeout_ms to at most %d, or have the person start %s with --%s %s (or %s: %s in the policy file)",
					p.maxTimeout.value.Milliseconds(), p.command, FlagMaxCommandTimeout, roundUp(f.Timeout), keyMaxCommandTimeout, roundUp(f.Timeout)), "")
		}
	case engine.EffectAgent:
		return p.allowAgent(f, refuse)
	case engine.EffectFileRead:
		if !p.fileReads.value {
			return refuse(p.off(p.fileReads, "lets no expression read workspace files"), p.enable(p.fileReads, "true"),
				"or check the files in a do step and report what you found in its output")
		}
	case engine.EffectJudge:
		if !p.judges.value {
			return refuse(p.off(p.judges, "asks no judge"), p.enable(p.judges, "true"),
				"or replace the judged ensure by an expression ensure")
		}
	default:
		return refuse(fmt.Sprintf("%s does not know the effect %q", p.command, f.Kind), "upgrade Stratum", "")
	}
	return nil
}

// allowAgent decides an agent started by the engine for a fanout item.
func (p *Policy) allowAgent(f engine.Effect, refuse func(why, allow, instead string) error) error {
	consumer := `or write "dispatch: consumer" on the fanout: its items then come back to the MCP client as ready steps to do itself (no agent is started)`
	if p.mode == Person {
		consumer = `or write "dispatch: consumer" on the fanout: its items are then handed out like do steps`
	}
	switch f.Origin {
	case engine.OriginBackground:
		consumer = `or run the flow with stratum_plan instead and do its steps yourself (with "dispatch: consumer" on a fanout its items come back to you too; no agent is started)`
	case engine.OriginAgentRun:
		consumer = ""
	}
	name := p.agentName(f.Agent)
	switch {
	case p.anyAgent.value:
	case len(p.agents) > 0 && slices.Contains(p.agents, name):
	case len(p.agents) > 0:
		return refuse(fmt.Sprintf("the policy file %s allows only the agents %s (agents at line %d), not %s%s",
			p.file.Path, strings.Join(p.agents, ", "), p.file.Line(keyAgents), name, p.overrideNote(f.Agent)),
			fmt.Sprintf("add %s to that list, or have the person start %s with --%s", name, p.command, FlagAllowAgents), consumer)
	default:
		return refuse(p.off(p.anyAgent, "starts no agents")+p.overrideNote(f.Agent), p.enable(p.anyAgent, "["+name+"]"), consumer)
	}
	if f.Sandbox == engine.SandboxWorkspaceWrite && p.sandbox.value == engine.SandboxReadOnly && f.Origin == engine.OriginAgentRun {
		return refuse(fmt.Sprintf("the policy file %s lets agents only read (agent_sandbox: read-only at line %d)", p.file.Path, p.file.Line(keyAgentSandbox)),
			"set agent_sandbox: workspace-write there", "or ask for sandboxMode read-only")
	}
	if f.Sandbox == engine.SandboxWorkspaceWrite && p.sandbox.value == engine.SandboxReadOnly {
		return refuse(fmt.Sprintf("the policy file %s lets agents only read (agent_sandbox: read-only at line %d), and a fanout item with isolation: worktree writes its worktree",
			p.file.Path, p.file.Line(keyAgentSandbox)),
			"set agent_sandbox: workspace-write there", "or use isolation: none (its agents only read)")
	}
	return nil
}

// agentName is the name the agents list matches for an engine item whose
// stage names stageAgent: the --agent override when there is one.
func (p *Policy) agentName(stageAgent string) string {
	switch p.agent {
	case "":
		return stageAgent
	case AgentClaude, AgentCodex:
		return p.agent
	}
	return AgentCommand
}

func (p *Policy) overrideNote(stageAgent string) string {
	if p.agent == "" || p.agent == stageAgent {
		return ""
	}
	return fmt.Sprintf(" (%s runs every item with --agent %s)", p.command, p.agent)
}

// off says why an effect is off, by where its setting comes from.
func (p *Policy) off(s setting[bool], what string) string {
	switch s.from {
	case fromFlag:
		return fmt.Sprintf("%s was started with --%s=false, so it %s", p.command, s.flag, what)
	case fromFile:
		return fmt.Sprintf("the policy file %s says %s: false (line %d), so %s %s", p.file.Path, s.key, p.file.Line(s.key), p.command, what)
	}
	return fmt.Sprintf("%s %s unless the person who starts it allows it", p.command, what)
}

// enable says how to turn an effect on: the flag when it has one, and
// the policy-file line.
func (p *Policy) enable(s setting[bool], fileValue string) string {
	line := fmt.Sprintf("%s: %s", s.key, fileValue)
	switch {
	case s.from == fromFile && s.flag != "":
		return fmt.Sprintf("set %s at line %d of %s, or have the person start %s with --%s", line, p.file.Line(s.key), p.file.Path, p.command, s.flag)
	case s.from == fromFile:
		return fmt.Sprintf("set %s at line %d of %s", line, p.file.Line(s.key), p.file.Path)
	case s.flag != "":
		return fmt.Sprintf("the person starts %s with --%s (or %s in a policy file given with --%s)", p.command, s.flag, line, FlagPolicy)
	}
	return fmt.Sprintf("the person puts %s in a policy file given to %s with --%s", line, p.command, FlagPolicy)
}

// roundUp is a duration rounded up to a whole second, as a flag value.
func roundUp(d time.Duration) time.Duration {
	if r := d % time.Second; r != 0 {
		d += time.Second - r
	}
	return d
}
