package driver

import (
	"encoding/json"
	"strings"

	"github.com/stratum-go/stratum/agent"
	"github.com/stratum-go/stratum/engine"
)

// AgentSetup is how the person who runs Stratum configured the agents
// (docs/agents.md, "Options"): the same for a Driver's attempts and for its
// Dispatcher's engine fanout items. A spec never sets any of it.
type AgentSetup struct {
	// Options configure every attempt: sandbox, permission mode, model,
	// effort, tools, thinking, and Timeout, the attempt's time limit (zero:
	// none). An attempt in a worktree it may write has the sandbox
	// workspace-write whatever Options say. Progress is replaced by the
	// field of that name below.
	Options agent.Options
	// ForStep, when set, gives the options of the attempts of one step,
	// starting from Options: the per-step place of a policy. stepID is the
	// step's scoped id ("parent/child" inside a subflow); a fanout item's
	// is its fanout step's.
	ForStep func(stepID string, base agent.Options) agent.Options
	// Progress, when set, receives each progress line an agent reports
	// while it works (Codex's events, Claude's stream, a command's stderr
	// lines) with the id of the attempt's entry ("draft", "fan/0"). It is
	// called from the attempt's goroutine and must not block for long.
	Progress func(id, line string)
}

// forAttempt is the options of one attempt of step stepID, reported as
// entry id.
func (s AgentSetup) forAttempt(stepID, id string) agent.Options {
	o := s.Options
	if s.ForStep != nil {
		o = s.ForStep(stepID, o)
	}
	o.Progress = nil
	if p := s.Progress; p != nil {
		o.Progress = func(line string) { p(id, line) }
	}
	return o
}

// showStderr hands a model CLI's stderr tail to the progress view after
// its attempt: a command agent's stderr lines were shown as they came, but
// claude's and codex's stderr is not part of their progress stream, and
// what they print there (warnings, a crash) would otherwise be seen only
// in a failure.
func (s AgentSetup) showStderr(conn agent.Connector, id string, res agent.Result) {
	if s.Progress == nil || res.Stderr == "" {
		return
	}
	name := ""
	switch conn.(type) {
	case *agent.Claude:
		name = "claude"
	case *agent.Codex:
		name = "codex"
	default:
		return
	}
	for line := range strings.Lines(res.Stderr) {
		if line = strings.TrimRight(line, "\r\n"); strings.TrimSpace(line) != "" {
			s.Progress(id, name+" stderr: "+line)
		}
	}
}

// usageOf is an agent's spend in step_done's form: {ms, tokens, usd}. ms is
// the measured wall time of the attempt, so that a flow's budget.ms counts
// the time its agents took.
func usageOf(u *agent.Usage) json.RawMessage {
	if u == nil {
		return nil
	}
	b, _ := json.Marshal(struct {
		Ms     float64  `json:"ms"`
		Tokens float64  `json:"tokens"`
		USD    *float64 `json:"usd,omitempty"`
	}{u.Ms, u.Tokens, u.USD}) // numbers only: cannot fail
	return b
}

// ledgerOf is an agent's spend in the engine's ledger units (for engine
// fanout items).
func ledgerOf(u *agent.Usage) engine.Ledger {
	var l engine.Ledger
	if u == nil {
		return l
	}
	l.MS, l.Tokens = u.Ms, u.Tokens
	if u.USD != nil {
		l.USD = *u.USD
	}
	return l
}

// engineTelemetry is an attempt's telemetry in the engine's form.
func engineTelemetry(t *agent.Telemetry) *engine.Telemetry {
	if t == nil {
		return nil
	}
	return &engine.Telemetry{DurationMs: float64(t.DurationMs), Model: modelOf(t.Model), Effort: t.Effort}
}

// telemetryOf is an attempt's telemetry in step_done's form.
func telemetryOf(t *agent.Telemetry) json.RawMessage {
	if t == nil {
		return nil
	}
	b, _ := json.Marshal(engineTelemetry(t)) // cannot fail
	return b
}

func modelOf(m string) string {
	if m = strings.TrimSpace(m); m != "" {
		return m
	}
	return "unknown"
}
