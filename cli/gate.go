package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/policy"
)

// gateCmd is "stratum gate approve|reject|revise RUN STEP": resolve a gate
// that waits for a person.
type gateCmd struct {
	token      string
	digest     string
	note       string
	resolvedBy string
	json       bool
	policy     policy.Flags
}

func (*gateCmd) Name() string { return "gate" }
func (*gateCmd) Synopsis() string {
	return "show RUN STEP [--json] | approve|reject|revise RUN STEP [--digest D] [--token T] [--note TEXT] [--resolved-by WHO] [--allow-commands] [--allow-agents] [--policy FILE] [--max-command-timeout D] [--max-agent-timeout D]"
}
func (*gateCmd) Short() string { return "show a waiting gate; approve, reject (kill) or revise it" }
func (*gateCmd) Long() string {
	return `Gate shows or resolves the gate STEP of run RUN ("stratum query gates" lists
them; a gate inside a subflow is RUNSTEP/GATE). reject is the engine
decision kill. A do step whose attempt was interrupted (its agent died)
waits the same way: approve runs it again, reject fails it.

show prints what the decision is about: each step under review with the
task it was given (rendered), its output and the diff stat of what it
changed in the workspace (stratum diff RUN STEP prints the patch), the
routes with the effective round limit, and the digest of all of it. --json
prints the gate view the MCP tool stratum_gates returns. Exit status: 0
shown; 1 unknown run, or STEP is not waiting for a decision (the gates that
are waiting are listed); 2 usage.

--digest D (the digest gate show prints) makes the decision refuse content
its author did not see: if what is under review is no longer what D was
computed on, nothing is decided ({"error": {"code": "stale_token"}}, exit 1,
with the current digest on stderr). Without --digest and --token the
decision applies to the gate round the command reads, whatever it shows.
With --token (the gate_token of "stratum query gates") it applies only if
that round is still the current one: a decision made while looking at an
earlier round is refused, so two people cannot both decide one round.

Output (JSON) and exit status:
  {_schema_version, ok: true, flow_id, step_id, outcome, result, status}   0
      outcome is approve, revise or kill; result is execute_step (a route
      or the rest of the flow runs next), killed, complete, or
      max_rounds_exceeded (a revise beyond max_rounds ended the run);
      status is the run's status afterwards
  {conflict: true, flow_id, step_id, detail}                               2
      the run has finished, or the gate is not waiting for a decision
  {"error": {code, message}}                                               1
      unknown run (NOT_FOUND), not a gate (not_a_gate_step), revise
      without a revise route (missing_on_revise), a stale --token
      (stale_token), a --digest of other content (stale_token), commands
      this command may not run
      (effect_not_allowed: nothing was decided), ...

A stratum run waiting at this gate in another terminal continues as soon
as the decision is recorded.

The run continues in this command until it needs an agent or a person:
commands the decision reaches (evaluate steps, pre_merge) run here, so
this command has the policy flags of stratum run (docs/policy.md). When
the run's spec runs commands and they are not allowed here (no
--allow-commands), the decision is refused before it is made
(effect_not_allowed): decide again with --allow-commands, as the run
was started.`
}

func (c *gateCmd) SetFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.digest, "digest", "", "apply only if the content under review still has this `DIGEST` (from stratum gate show)")
	fs.StringVar(&c.token, "token", "", "apply only to the gate round with this gate `TOKEN`")
	fs.BoolVar(&c.json, "json", false, "show: print the gate view as JSON")
	fs.StringVar(&c.note, "note", "", "a note explaining the decision, as `TEXT` (recorded in the run)")
	fs.StringVar(&c.resolvedBy, "resolved-by", "", "who decided, `WHO` (recorded in the run; default: your user name, as stratum run records)")
	c.policy.RegisterEffects(fs)
}

type gateResult struct {
	SchemaVersion string           `json:"_schema_version"`
	OK            bool             `json:"ok"`
	FlowID        string           `json:"flow_id"`
	StepID        string           `json:"step_id"`
	Outcome       engine.Decision  `json:"outcome"`
	Result        string           `json:"result"`
	Status        engine.RunStatus `json:"status"`
	Note          string           `json:"note,omitempty"`
	ResolvedBy    string           `json:"resolved_by"`
}

type conflictDoc struct {
	SchemaVersion string `json:"_schema_version"`
	Conflict      bool   `json:"conflict"`
	FlowID        string `json:"flow_id"`
	StepID        string `json:"step_id,omitempty"`
	Detail        string `json:"detail"`
}

func (c *gateCmd) Run(ctx context.Context, env *Env, args []string) error {
	if len(args) != 3 {
		return usagef("expected show|approve|reject|revise RUN STEP, got %d arguments", len(args))
	}
	if args[0] == "show" {
		return c.show(ctx, env, args[1], args[2])
	}
	if c.json {
		return usagef("--json goes with gate show (a decision always prints JSON)")
	}
	var decision engine.Decision
	switch args[0] {
	case "approve":
		decision = engine.DecisionApprove
	case "reject", "kill":
		decision = engine.DecisionKill
	case "revise":
		decision = engine.DecisionRevise
	default:
		return usagef("unknown decision %q (want show, approve, reject or revise)", args[0])
	}
	if c.resolvedBy != "" {
		if err := checkDecider(c.resolvedBy); err != nil {
			return err
		}
	}
	c.resolvedBy = deciderName(env, c.resolvedBy)
	runID, stepID := args[1], args[2]
	if err := checkRunID(env, runID); err != nil {
		return err
	}
	sys, err := openSystem(env, systemConfig{command: "stratum gate", mode: policy.Person, flags: c.policy})
	var ue *usageError
	if errors.As(err, &ue) {
		return err // a policy file or --allow-root that cannot be used
	}
	if err != nil {
		return fail(env, "INVALID", err.Error())
	}
	defer sys.Close()
	if err := sys.decisionAllowed(ctx, runID); err != nil {
		return fail(env, engine.CodeEffectNotAllowed, err.Error())
	}
	conflict := func(detail string) error {
		_ = writeJSON(env.Stdout, conflictDoc{SchemaVersion: schemaVersion, Conflict: true, FlowID: runID, StepID: stepID, Detail: detail})
		fmt.Fprintf(env.Stderr, "stratum gate: %s\n", detail)
		return exitCode(ExitUsage)
	}
	// One engine call, one transition: the engine resolves the id, checks
	// the round and decides under the run's lock.
	d, err := sys.engine.DecideGate(ctx, engine.GateRequest{RunID: runID, StepID: stepID, Decision: decision, GateToken: c.token,
		CurrentRound: c.token == "", Digest: c.digest, Rationale: c.note, ResolvedBy: c.resolvedBy})
	var ee *engine.Error
	errors.As(err, &ee)
	switch {
	case err == nil:
	case isNotFound(err):
		return fail(env, "NOT_FOUND", fmt.Sprintf("Flow '%s' not found", runID))
	case (errors.Is(err, engine.ErrRunTerminal) || errors.Is(err, engine.ErrRunCancelled)) && ee != nil && ee.State != nil:
		if ee.State.Status == engine.StatusCompleted {
			return conflict("Flow is already complete")
		}
		return conflict("Flow is already " + string(ee.State.Status))
	case errors.Is(err, engine.ErrNotAwaiting) && ee != nil && ee.Why == engine.NotWaiting:
		return conflict("gate is not awaiting a decision")
	case errors.Is(err, engine.ErrNotAwaiting) && ee != nil:
		msg := fmt.Sprintf("step '%s' of run '%s' is not a gate step", stepID, runID)
		if ee.Why == engine.UnknownStep {
			msg = fmt.Sprintf("run '%s' has no step '%s'", runID, stepID)
		}
		if gates := waitingGates(ee.State); len(gates) > 0 {
			msg += fmt.Sprintf(" (gates waiting: %s)", strings.Join(gates, ", "))
		}
		return fail(env, "not_a_gate_step", msg)
	case errors.Is(err, engine.ErrStaleToken) && ee != nil && ee.Gate != nil && c.digest != "" && ee.Gate.Digest != c.digest:
		fmt.Fprintf(env.Stderr, "stratum gate: nothing was decided: what %s shows for review is not what --digest %s was computed on (its digest is now %s); read it with: stratum gate show %s %s\n",
			stepID, c.digest, ee.Gate.Digest, runID, stepID)
		_ = writeJSON(env.Stdout, errorDoc{Error: errorBody{Code: engine.CodeOf(err), Message: err.Error()}})
		return exitCode(ExitFailure)
	default:
		return fail(env, engineCode(err), err.Error())
	}
	resp := d.Response
	return writeJSON(env.Stdout, gateResult{
		SchemaVersion: schemaVersion, OK: true, FlowID: runID, StepID: stepID, Outcome: decision,
		Result: gateOutcome(decision, d.Target, resp), Status: resp.Status, Note: c.note, ResolvedBy: c.resolvedBy,
	})
}

// waitingGates lists the gates a run's state waits on.
func waitingGates(r *engine.Response) []string {
	var out []string
	if r != nil {
		for _, w := range r.Waiting {
			if w.Kind == engine.WaitGate {
				out = append(out, w.StepID)
			}
		}
	}
	return out
}

// gateOutcome names what the decision led to, from the gate's own route
// (the result of docs/cli.md, "stratum gate").
func gateOutcome(decision engine.Decision, target string, resp *engine.Response) string {
	switch {
	case decision == engine.DecisionRevise && (resp.Status == engine.StatusFailed || resp.Status == engine.StatusBudgetExhausted):
		return "max_rounds_exceeded"
	case target != "":
		return "execute_step"
	case decision == engine.DecisionKill:
		return "killed"
	case resp.Status == engine.StatusCompleted:
		return "complete"
	}
	return "execute_step"
}

// decisionAllowed refuses a gate decision on runID before it is made when
// the run's spec runs commands this process may not run: a decision
// continues the run in the process that makes it, and a command it
// reached would fail the run. stratum gate and stratum serve ask it
// before every decision (docs/policy.md).
func (s *system) decisionAllowed(ctx context.Context, runID string) error {
	plan, err := s.engine.RunPlan(ctx, runID)
	if err != nil {
		return nil // the decision itself reports an unknown or unreadable run
	}
	for _, f := range engine.SpecEffects(plan) {
		if f.Kind != engine.EffectCommand {
			continue // agents are dispatched by the run's driver, not here
		}
		if err := s.policy.Allow(f); err != nil {
			return fmt.Errorf("the decision was not made: it would continue run %s in this command, and %w", runID, err)
		}
	}
	return nil
}
