package cli

import (
	"flag"
	"fmt"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/stratum-go/stratum/agent"
	"github.com/stratum-go/stratum/ir"
	"github.com/stratum-go/stratum/policy"
)

// The time limits of `stratum run` when the person sets none
// (docs/decisions/0090-agent-time-limits.md): long enough for an agent
// that implements a change, short enough that a hung agent cannot hold a
// CI job forever.
const (
	DefaultAttemptTimeout = 30 * time.Minute
	DefaultRunTimeout     = 4 * time.Hour
)

// agentFlags are the flags of `stratum run` that configure the agents
// (docs/agents.md, "Options"). A spec never sets any of them.
type agentFlags struct {
	sandbox         string
	permissionMode  string
	model           string
	effort          string
	allowedTools    multiFlag
	disallowedTools multiFlag
	thinking        string
	attemptTimeout  time.Duration
	runTimeout      time.Duration
	verbose         bool
	resolvedBy      string
}

func (a *agentFlags) set(fs *flag.FlagSet) {
	fs.StringVar(&a.sandbox, "sandbox", "", "what agents may change, `MODE`: read-only (default), workspace-write or danger-full-access")
	fs.StringVar(&a.permissionMode, "permission-mode", "", "claude's exact permission `MODE` (wins over --sandbox)")
	fs.StringVar(&a.model, "model", "", "the `MODEL` claude or codex uses")
	fs.StringVar(&a.effort, "effort", "", "reasoning effort `LEVEL` (claude: low, medium, high, xhigh, max; codex: minimal, low, medium, high, xhigh)")
	fs.Var(&a.allowedTools, "allowed-tools", "a tool `RULE` claude may use without asking, such as Read or 'Bash(git diff:*)' (repeatable)")
	fs.Var(&a.disallowedTools, "disallowed-tools", "a tool `RULE` claude may not use (repeatable)")
	fs.StringVar(&a.thinking, "thinking", "", "claude's extended thinking, `MODE`: enabled, enabled:TOKENS, adaptive or disabled")
	fs.DurationVar(&a.attemptTimeout, "attempt-timeout", DefaultAttemptTimeout, "stop an agent attempt after `DURATION` (0: no limit)")
	fs.DurationVar(&a.runTimeout, "run-timeout", DefaultRunTimeout, "stop driving after `DURATION`; the run stays resumable (0: no limit)")
	fs.BoolVar(&a.verbose, "verbose", false, "show the agents' progress and stderr on stderr")
	fs.StringVar(&a.resolvedBy, "resolved-by", "", "who decides gates at this terminal, `WHO` (default: your user name)")
}

// options are the agent options the flags give.
func (a *agentFlags) options() (agent.Options, error) {
	if a.attemptTimeout < 0 || a.runTimeout < 0 {
		return agent.Options{}, usagef("--attempt-timeout and --run-timeout take a duration such as 45m or 2h (0 for no limit)")
	}
	if a.resolvedBy != "" {
		if err := checkDecider(a.resolvedBy); err != nil {
			return agent.Options{}, err
		}
	}
	o := agent.Options{Sandbox: a.sandbox, PermissionMode: a.permissionMode, Model: a.model, Effort: a.effort,
		AllowedTools: a.allowedTools, DisallowedTools: a.disallowedTools, Timeout: a.attemptTimeout}
	if a.thinking != "" {
		typ, budget, hasBudget := strings.Cut(a.thinking, ":")
		t := &agent.Thinking{Type: typ}
		if hasBudget {
			n, err := strconv.Atoi(budget)
			if err != nil || n <= 0 {
				return agent.Options{}, usagef("--thinking %s: the budget after ':' must be a positive number of tokens", a.thinking)
			}
			t.BudgetTokens = n
		}
		o.Thinking = t
	}
	return o, nil
}

// checkOptions refuses options that an agent the run will use cannot
// honour (codex has no tool rules, a command agent no thinking, ...),
// before anything runs. agentValue is --agent; without it every agent the
// plan's steps name is checked.
func checkOptions(o agent.Options, agentValue string, plan *ir.Plan) error {
	var names []string
	switch agentValue {
	case "claude", "codex", "human":
		names = []string{agentValue}
	case "":
		names = planAgents(plan)
	default:
		names = []string{"command"}
	}
	for _, name := range names {
		if err := o.Validate(name); err != nil {
			what := name
			if agentValue == "" {
				what = "the " + name + " steps of the spec"
			}
			return usagef("agent options for %s: %v (see docs/agents.md, \"Options\")", what, err)
		}
	}
	return nil
}

// planAgents lists the agents the do steps and fanout stages of a plan
// name (claude when they name none), sorted.
func planAgents(p *ir.Plan) []string {
	if p == nil {
		return nil
	}
	var out []string
	add := func(a ir.Agent) {
		name := string(a)
		if name == "" {
			name = ir.DefaultAgent
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	for _, f := range p.Flows {
		for _, s := range f.Steps {
			switch {
			case s.Kind == ir.KindDo:
				add(s.Agent)
			case s.Fanout != nil:
				for _, st := range s.Fanout.Stages {
					add(st.Agent)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// decider is who decides gates at this terminal: --resolved-by, else the
// user's name (deciderName).
func (a *agentFlags) decider(env *Env) string { return deciderName(env, a.resolvedBy) }

// deciderName is the person recorded with a gate decision made at a
// terminal (stratum run --gate ask, stratum gate): given (--resolved-by),
// else the user's name from the environment, then the system, else
// "human" (docs/cli.md, "stratum gate").
func deciderName(env *Env, given string) string {
	if given != "" {
		return given
	}
	for _, k := range []string{"USER", "LOGNAME"} {
		if v := strings.TrimSpace(env.getenv(k)); v != "" {
			return v
		}
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "human"
}

// progressLine is how an agent's progress line is shown with --verbose.
func progressLine(id, line string) string {
	return fmt.Sprintf("%s: %s", id, line)
}

// args repeats the agent options given for a resume hint (they are not
// part of the run).
func (a *agentFlags) args() string {
	var b strings.Builder
	add := func(name, v string) {
		if v != "" {
			b.WriteString(" --" + name + " " + shellQuote(v))
		}
	}
	add("sandbox", a.sandbox)
	add("permission-mode", a.permissionMode)
	add("model", a.model)
	add("effort", a.effort)
	for _, r := range a.allowedTools {
		add("allowed-tools", r)
	}
	for _, r := range a.disallowedTools {
		add("disallowed-tools", r)
	}
	add("thinking", a.thinking)
	if a.attemptTimeout != DefaultAttemptTimeout {
		add("attempt-timeout", a.attemptTimeout.String())
	}
	if a.runTimeout != DefaultRunTimeout {
		add("run-timeout", a.runTimeout.String())
	}
	return b.String()
}

// checkDecider refuses a --resolved-by the trace could not show as it
// is: empty, longer than 128 characters, or holding control characters.
func checkDecider(who string) error {
	if strings.TrimSpace(who) != who || who == "" || utf8.RuneCountInString(who) > 128 || !utf8.ValidString(who) {
		return usagef("--resolved-by %q: want a name of 1 to 128 characters without surrounding spaces", who)
	}
	for _, r := range who {
		if unicode.IsControl(r) {
			return usagef("--resolved-by %q: a name without control characters", who)
		}
	}
	return nil
}

// stepAgentOptions is the per-step place of the policy for agent options
// (docs/policy.md, "Per-step agent options"): the options of one step's
// attempts are the run's, with what the policy file sets for that step
// put in their place, and their time limit cut to the policy's bound.
func stepAgentOptions(pol func() *policy.Policy) func(stepID string, base agent.Options) agent.Options {
	return func(stepID string, base agent.Options) agent.Options {
		p := pol()
		// Every agent Stratum starts goes through here: its time limit is
		// held to the policy's bound (docs/policy.md, "Agent time limits").
		base.Timeout = p.AgentTimeout(base.Timeout)
		sa, ok := p.StepAgent(stepID)
		if !ok {
			return base
		}
		return withStepAgent(base, sa)
	}
}

// withStepAgent puts the fields a policy sets for a step over base.
func withStepAgent(base agent.Options, sa policy.StepAgent) agent.Options {
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&base.Model, sa.Model)
	set(&base.Effort, sa.Effort)
	set(&base.Sandbox, sa.Sandbox)
	set(&base.PermissionMode, sa.PermissionMode)
	if sa.AllowedTools != nil {
		base.AllowedTools = sa.AllowedTools
	}
	if sa.DisallowedTools != nil {
		base.DisallowedTools = sa.DisallowedTools
	}
	return base
}

// checkStepOptions refuses, before anything runs, per-step options of the
// policy file that the agent of their step cannot honour, naming the
// file's line; a step the spec does not have is said once on stderr (a
// policy may serve several specs).
func checkStepOptions(env *Env, pol *policy.Policy, base agent.Options, agentValue string, plan *ir.Plan) error {
	for _, id := range pol.StepAgentIDs() {
		sa, _ := pol.StepAgent(id)
		name, found := stepAgentName(plan, id)
		if !found {
			fmt.Fprintf(env.Stderr, "note: policy file %s:%d: steps: %s names no step of this spec\n", pol.PolicyFile(), sa.Line, id)
			continue
		}
		switch agentValue {
		case "claude", "codex", "human":
			name = agentValue
		case "":
		default:
			name = "command"
		}
		if err := withStepAgent(base, sa).Validate(name); err != nil {
			return usagef("policy file %s:%d: steps: %s: %v (see docs/policy.md, \"Per-step agent options\")", pol.PolicyFile(), sa.Line, id, err)
		}
	}
	return nil
}

// stepAgentName finds step id (a scoped id: its last part) among the
// plan's do steps and fanouts and returns the agent it names.
func stepAgentName(plan *ir.Plan, id string) (string, bool) {
	if plan == nil {
		return "", false
	}
	last := id[strings.LastIndexByte(id, '/')+1:]
	for _, f := range plan.Flows {
		for _, s := range f.Steps {
			if s.ID != last {
				continue
			}
			switch {
			case s.Kind == ir.KindDo:
				return agentOrDefault(s.Agent), true
			case s.Fanout != nil && len(s.Fanout.Stages) > 0:
				return agentOrDefault(s.Fanout.Stages[0].Agent), true
			}
		}
	}
	return "", false
}

func agentOrDefault(a ir.Agent) string {
	if a == "" {
		return ir.DefaultAgent
	}
	return string(a)
}
