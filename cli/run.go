package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/stratum-go/stratum/agent"
	"github.com/stratum-go/stratum/driver"
	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/internal/eventtext"
	"github.com/stratum-go/stratum/ir"
	"github.com/stratum-go/stratum/policy"
)

// ExitGate is the exit status of a stratum run that stopped at a gate.
const ExitGate = 3

// runCmd is "stratum run": drive a flow end to end on this machine.
type runCmd struct {
	inputs      multiFlag
	inputJSON   string
	agent       string
	gate        string
	workspace   string
	json        bool
	resume      string
	concurrency int
	agents      agentFlags
	policy      policy.Flags

	// textInputs are the --input fields of a non-string type whose value
	// was not JSON (kept as text for the input contract to judge).
	textInputs []string
}

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func (*runCmd) Name() string { return "run" }
func (*runCmd) Synopsis() string {
	return "SPEC [--input k=v]... [--input-json JSON|@FILE] [--agent NAME|CMD] [--gate ask|approve|kill|wait|stop] [--workspace DIR] [--concurrency N] [AGENT OPTIONS] [POLICY FLAGS] [--json]\n       stratum run --resume RUN [--agent NAME|CMD] [--gate ...] [--concurrency N] [AGENT OPTIONS] [POLICY FLAGS] [--json]\n  AGENT OPTIONS: [--sandbox MODE] [--permission-mode MODE] [--model MODEL] [--effort LEVEL]\n       [--allowed-tools RULE]... [--disallowed-tools RULE]... [--thinking MODE]\n       [--attempt-timeout DURATION] [--run-timeout DURATION] [--verbose] [--resolved-by WHO]\n  POLICY FLAGS: [--allow-commands] [--allow-agents=false] [--allow-root DIR]... [--policy FILE] [--max-command-timeout D]\n       [--max-agent-timeout D]"
}
func (*runCmd) Short() string { return "run a flow end to end with local agents" }
func (*runCmd) Long() string {
	return `Run plans a run of SPEC's entry flow and drives it to the end on this
machine, without an MCP host: every ready do step (and consumer fanout
item) is handed to an agent, its JSON answer checked against the step's
contract and ensures (a rejected answer is retried with the failure as
previousFailure), engine fanouts run their items through the same agents,
and gates are decided as --gate says. The run is an ordinary persisted
run: "stratum query", "stratum audit", "stratum watch", "stratum gate" and
"stratum flow cancel" see it while it runs.

Input: --input-json gives the whole input object (JSON text, or @FILE);
each --input k=v sets one field, converted by the field's declared type
(numbers, booleans and JSON for arrays and objects; strings as typed).

Agents (--agent, for every step; see docs/agents.md): claude, codex, human,
or a command line run for each attempt, reading the task as JSON on stdin
and printing the output as JSON on stdout. Without --agent each step's
agent: decides (claude by default), using the claude or codex CLI on PATH.

Agent options (docs/agents.md, "Options"; they are not part of the run,
so give them again when resuming): --sandbox says what an agent may
change (read-only by default; a worktree fanout item may always write
its worktree); --permission-mode, --allowed-tools, --disallowed-tools and
--thinking apply to claude; --model and --effort to claude and codex. An
option an agent cannot honour is refused before the run starts. Each
attempt is stopped after --attempt-timeout (default 30m; the attempt
fails) and the drive after --run-timeout (default 4h; the agents at work
are stopped, their attempts fail, and the run stays resumable); 0 means
no limit. --max-agent-timeout D (or max_agent_timeout: in the --policy
FILE) bounds --attempt-timeout: a longer one is cut to it, and said.
--verbose shows the agents' progress lines and stderr.

Gates (--gate): ask prompts approve/revise/kill on the terminal, then an
optional note, recorded with the decision and the decider (--resolved-by,
default your user name); it is the default when standard input is a
terminal, and a decision made elsewhere with "stratum gate" is accepted
too; approve or kill decide every gate (for CI); wait waits for a
decision made elsewhere, printing how to make it; stop (the default
otherwise) stops at the gate: decide with "stratum gate" and continue
with "stratum run --resume RUN".

What the run may do (docs/policy.md) is decided by you, never by the
spec. Agents are allowed: do steps and engine fanouts go to the agent
you chose (--allow-agents=false refuses specs whose fanouts would start
one). Commands are not: a spec with an evaluate step or a pre_merge
command is refused before anything runs unless you pass
--allow-commands (each then has at most --max-command-timeout, default
10m). Workspace files may be read and the judge asked. The effects the
run may cause are listed on stderr before it starts. --workspace DIR is
an allowed root; more with --allow-root DIR or a --policy FILE. A
resumed run is held to the policy of the resuming command: a run whose
spec needs an effect it does not allow is not resumed (exit 2).

Progress goes to stderr, one line per event; the flow's output goes to
stdout as JSON (with --json: the run's final state, {status, runId,
output|failure|waiting, ledger}).

Exit status: 0 completed; 1 failed, killed, budget exhausted, cancelled,
or stopped by a problem outside the run (resumable); 2 usage, invalid
spec, invalid input, an effect the policy refuses (nothing was run) or
an unknown --resume RUN; 3 stopped at a gate.`
}

func (c *runCmd) SetFlags(fs *flag.FlagSet) {
	fs.Var(&c.inputs, "input", "set input field `k=v` (repeatable)")
	fs.StringVar(&c.inputJSON, "input-json", "", "the input object as `JSON` text or @FILE")
	fs.StringVar(&c.agent, "agent", "", "agent for every step: claude, codex, human or a command line `CMD`")
	fs.StringVar(&c.gate, "gate", "", "at gates, `MODE`: ask, approve, kill, wait or stop (default ask on a terminal, else stop)")
	fs.StringVar(&c.workspace, "workspace", "", "workspace root `DIR` (default: the current directory)")
	fs.BoolVar(&c.json, "json", false, "print the final run state as JSON")
	fs.StringVar(&c.resume, "resume", "", "continue the persisted run `RUN`")
	fs.IntVar(&c.concurrency, "concurrency", driver.DefaultConcurrency, "at most `N` agents at once for do steps")
	c.agents.set(fs)
	c.policy.Register(fs)
}

func (c *runCmd) Run(ctx context.Context, env *Env, args []string) error {
	interactive := isTerminal(env.Stdin)
	mode := driver.GateMode(c.gate)
	switch mode {
	case "":
		mode = driver.GateStop
		if interactive {
			mode = driver.GateAsk
		}
	case driver.GateAsk, driver.GateApprove, driver.GateKill, driver.GateWait, driver.GateStop:
	default:
		return usagef("unknown --gate %q (want ask, approve, kill, wait or stop)", c.gate)
	}
	if c.concurrency < 1 {
		return usagef("--concurrency must be at least 1")
	}
	if c.resume != "" {
		if len(args) != 0 || len(c.inputs) > 0 || c.inputJSON != "" || c.workspace != "" {
			return usagef("--resume takes no SPEC, --input, --input-json or --workspace: the run keeps its own")
		}
	} else if len(args) != 1 {
		return usagef("expected one spec file (or - for standard input), got %d arguments", len(args))
	}
	if err := checkAgentFlag(c.agent); err != nil {
		return err
	}
	agentOpts, err := c.agents.options()
	if err != nil {
		return err
	}

	var plan *ir.Plan
	var req engine.PlanRequest
	if c.resume == "" {
		src, display, err := readSpec(env, "run", args[0])
		if err != nil {
			return err
		}
		if args[0] == "-" && (mode == driver.GateAsk || c.agent == "human") {
			return usagef("the spec cannot come from standard input when the terminal answers gates or steps")
		}
		var ds ir.Diagnostics
		plan, ds = ir.Build(src)
		if len(ds) > 0 {
			_ = writeResult(env.Stderr, "text", display, ds)
			fmt.Fprintf(env.Stderr, "invalid: %s in %s\n", plural(len(ds), "problem"), display)
			return exitCode(ExitUsage)
		}
		if err := checkOptions(agentOpts, c.agent, plan); err != nil {
			return err
		}
		input, err := c.buildInput(plan.EntryFlow())
		if err != nil {
			return err
		}
		inputJSON, err := json.Marshal(input)
		if err != nil {
			return usagef("the input cannot be encoded as JSON: %v", err)
		}
		req = engine.PlanRequest{Spec: src, Input: inputJSON}
		if c.workspace != "" {
			abs, err := filepath.Abs(c.workspace)
			if err != nil {
				return usagef("--workspace: %v", err)
			}
			if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
				return usagef("--workspace %s is not a directory", c.workspace)
			}
			req.WorkspaceRoot = abs
			// The person named it: it is an allowed root.
			c.policy.Roots = append(c.policy.Roots, abs)
		}
	} else if msg := runIDProblem(c.resume); msg != "" {
		// stdout is the flow's output: a bad --resume is said on stderr
		// only, and it is a bad argument (2), not a failed run (1).
		fmt.Fprintf(env.Stderr, "stratum run: --resume: %s\n", msg)
		return exitCode(ExitUsage)
	}

	var term *terminal
	resolver := &agent.Resolver{}
	if mode == driver.GateAsk || c.agent == "human" {
		term = newTerminal(env.Stdin)
		resolver.Human = agent.NewHuman(&humanInput{t: term}, env.Stderr)
	}
	var mu sync.Mutex // progress lines come from the drive and the dispatcher
	say := func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(env.Stderr, format+"\n", a...)
	}
	var runPolicy *policy.Policy // set once the composition root is open, before any agent starts
	opts := driver.Options{
		Agent: c.agent, Resolver: resolver, Gates: mode, Concurrency: c.concurrency,
		Event: func(ev engine.Event) {
			if ev.Type == engine.EventAttemptStarted {
				return // this drive started it: "ready" said so
			}
			if d := eventtext.Describe(ev); d != "" {
				say("%s", printable(d))
			}
		},
		Notice:     func(msg string) { say("note: %s", msg) },
		Agents:     driver.AgentSetup{Options: agentOpts, ForStep: stepAgentOptions(func() *policy.Policy { return runPolicy })},
		RunTimeout: c.agents.runTimeout,
	}
	if c.agents.verbose {
		opts.Agents.Progress = func(id, line string) { say("%s", progressLine(id, line)) }
	}
	switch mode {
	case driver.GateAsk:
		who := c.agents.decider(env)
		opts.AskGate = func(ctx context.Context, g engine.GateView) (driver.GateAnswer, error) {
			return askGate(ctx, env, term, g, who)
		}
	case driver.GateWait:
		opts.GateWaiting = func(g engine.WaitingGate) {
			say("%s: waiting for a decision made elsewhere: stratum gate %s %s %s [--note TEXT]", g.StepID, gateChoices(g), g.RunID, g.StepID)
		}
	}
	d := driver.New(opts)
	sys, err := openSystem(env, systemConfig{dispatcher: d.Dispatcher(), command: "stratum run", mode: policy.Person, flags: c.policy, agent: c.agent})
	if err != nil {
		return err
	}
	defer sys.Close()
	runPolicy = sys.policy
	what := "--attempt-timeout"
	if agentOpts.Timeout == DefaultAttemptTimeout {
		what = "the default --attempt-timeout"
	}
	if cut := sys.policy.AgentTimeoutCut(what, agentOpts.Timeout); cut != "" {
		say("stratum run: %s", cut)
	}
	e := sys.engine
	if c.resume != "" {
		p, err := e.RunPlan(ctx, c.resume)
		if isNotFound(err) {
			fmt.Fprintf(env.Stderr, "stratum run: --resume: no run %s in %s (\"stratum query flows\" lists the runs there)\n", c.resume, sys.root)
			return exitCode(ExitUsage)
		}
		if err == nil {
			plan = p
			if err := checkOptions(agentOpts, c.agent, plan); err != nil {
				return err
			}
		}
	}
	if plan != nil {
		if err := checkStepOptions(env, sys.policy, agentOpts, c.agent, plan); err != nil {
			return err
		}
	}
	if plan != nil && !listEffects(say, sys.policy, plan) {
		if c.resume == "" {
			return exitCode(ExitUsage) // the engine would refuse the plan with the same words
		}
		say("stratum run: run %s is not resumed here: its spec needs effects this stratum run does not allow (nothing was run)", c.resume)
		return exitCode(ExitUsage)
	}

	var out *driver.Outcome
	if c.resume != "" {
		say("resuming run %s", c.resume)
		out, err = d.Resume(ctx, e, c.resume)
	} else {
		out, err = d.Start(ctx, e, req)
	}
	return c.finish(env, out, err, say)
}

// finish reports how the drive ended and picks the exit status.
func (c *runCmd) finish(env *Env, out *driver.Outcome, err error, say func(string, ...any)) error {
	var ee *engine.Error
	var halt *driver.HaltError
	switch {
	case errors.As(err, &ee) && errors.Is(err, engine.ErrInvalidSpec):
		for _, d := range ee.Diagnostics {
			say("%d:%d: %s: %s (at %s)", d.Line, d.Column, d.Code, d.Message, d.Path)
		}
		return exitCode(ExitUsage)
	case errors.Is(err, engine.ErrEffectNotAllowed), isWorkspaceRefusal(err):
		// Nothing was planned or run (the list above already said which).
		say("stratum run: %v", err)
		return exitCode(ExitUsage)
	case errors.As(err, &ee) && errors.Is(err, engine.ErrInvalidInput):
		say("stratum run: the input does not match the flow's input contract:")
		for _, d := range ee.Details {
			say("  %s: %s", d.Path, d.Message)
		}
		if len(ee.Details) == 0 {
			say("  %s", ee.Message)
		}
		if len(c.textInputs) > 0 {
			what := "the value of " + c.textInputs[0] + " was"
			if len(c.textInputs) > 1 {
				what = "the values of " + strings.Join(c.textInputs, ", ") + " were"
			}
			say("note: --input values of fields that are not strings are read as JSON (--input n=3, --input ok=true, --input 'tags=[\"a\",\"b\"]'); %s not JSON and went in as text", what)
		}
		return exitCode(ExitUsage)
	case errors.As(err, &halt):
		say("stratum run: %v", err)
		if limit := (*driver.RunTimeLimitError)(nil); errors.As(err, &limit) {
			say("note: --run-timeout sets that limit (0 for none)")
		}
		say("the run is still running; continue it with: stratum run --resume %s%s", halt.RunID, c.agentArg())
		return exitCode(ExitFailure)
	case err != nil:
		if c.resume != "" && isNotFound(err) {
			say("stratum run: --resume: no run %s", c.resume)
			return exitCode(ExitUsage)
		}
		say("stratum run: %v", err)
		return exitCode(ExitFailure)
	}
	resp := out.Response
	if c.json {
		if err := writeJSON(env.Stdout, resp); err != nil {
			return err
		}
	}
	switch resp.Status {
	case engine.StatusCompleted:
		if !c.json {
			if err := writeJSON(env.Stdout, resp.Output); err != nil {
				return err
			}
		}
		say("run %s completed", out.RunID)
		return nil
	case engine.StatusRunning:
		var ids []string
		interrupted := map[string]bool{}
		gates := map[string]engine.WaitingGate{}
		for _, g := range out.Gates {
			ids = append(ids, g.StepID)
			interrupted[g.StepID] = g.Kind == engine.WaitInterrupted
			gates[g.StepID] = g
		}
		sort.Strings(ids)
		what := plural(len(ids), "gate")[2:]
		for _, id := range ids {
			if interrupted[id] {
				what = "a decision on"
			}
		}
		say("run %s is waiting at %s %s", out.RunID, what, strings.Join(ids, ", "))
		for _, id := range ids {
			say("  read:     stratum gate show %s %s   (what is under review, and the digest to decide with)", out.RunID, id)
			if interrupted[id] {
				say("  %s: its attempt was interrupted (the agent died mid-way and may have left changes)", id)
				say("  decide:   stratum gate approve|reject %s %s   (approve runs it again, reject fails it)", out.RunID, id)
				continue
			}
			say("  decide:   stratum gate %s %s %s", gateChoices(gates[id]), out.RunID, id)
		}
		say("  continue: stratum run --resume %s%s", out.RunID, c.agentArg())
		return exitCode(ExitGate)
	}
	reason := ""
	if resp.Failure != nil {
		reason = ": " + resp.Failure.Reason
	}
	say("run %s %s%s", out.RunID, strings.ReplaceAll(string(resp.Status), "_", " "), reason)
	return exitCode(ExitFailure)
}

// checkAgentFlag refuses an --agent that can never start (a missing or
// non-executable program, claude or codex not on PATH) before a run is
// planned, so that a typo or a missing install costs no run.
func checkAgentFlag(value string) error {
	switch value {
	case "", "human":
		return nil
	case "claude", "codex":
		if _, err := exec.LookPath(value); err != nil {
			return usagef("--agent %s: the %s CLI is not on PATH; install it, or pass --agent '<command>' (see docs/agents.md)", value, value)
		}
		return nil
	}
	if _, err := (&agent.Resolver{}).Resolve(value, ""); err != nil {
		return usagef("%v", err) // the message names --agent and the program
	}
	return nil
}

// agentArg repeats --agent and the agent options for a resume hint (the
// choice is not part of the run).
func (c *runCmd) agentArg() string {
	if c.agent == "" {
		return c.agents.args()
	}
	return " --agent " + shellQuote(c.agent) + c.agents.args()
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// buildInput assembles the entry input from --input-json and --input k=v,
// converting each k=v by the declared type of field k.
func (c *runCmd) buildInput(flow *ir.Flow) (map[string]any, error) {
	input := map[string]any{}
	if c.inputJSON != "" {
		text := []byte(c.inputJSON)
		if name, ok := strings.CutPrefix(c.inputJSON, "@"); ok {
			b, err := readFile(name)
			if err != nil {
				return nil, usagef("--input-json: %v", err)
			}
			text = b
		}
		if err := json.Unmarshal(text, &input); err != nil || input == nil {
			return nil, usagef("--input-json must be a JSON object: %v", err)
		}
	}
	for _, kv := range c.inputs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("--input %q is not k=v", kv)
		}
		f, ok := flow.Input.Field(k)
		if !ok {
			names := make([]string, len(flow.Input.Fields))
			for i, f := range flow.Input.Fields {
				names[i] = f.Name
			}
			if len(names) == 0 {
				return nil, usagef("--input %s: flow %s takes no input; leave --input out", kv, flow.Name)
			}
			return nil, usagef("--input %s: flow %s has no input field %q (fields: %s)", kv, flow.Name, k, strings.Join(names, ", "))
		}
		val, asText := convertInput(f.Type, v)
		if asText {
			c.textInputs = append(c.textInputs, k)
		}
		input[k] = val
	}
	return input, nil
}

// convertInput converts the text of a k=v input by the field's type:
// string and enum fields take the text as typed, any other field reads it
// as JSON. Text that is not JSON is passed on as a string (asText), so that
// the engine's input contract check says what is wrong in the same words
// as for stratum_plan ("input.n: expected an integer, got the string
// \"abc\"").
func convertInput(t *ir.Type, v string) (val any, asText bool) {
	if t.Optional && v == "null" && t.Kind != ir.TypeString && t.Kind != ir.TypeEnum {
		return nil, false
	}
	switch t.Kind {
	case ir.TypeString, ir.TypeEnum:
		return v, false
	}
	var out any
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		return v, true
	}
	return out, false
}
