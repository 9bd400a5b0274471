package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/stratum-go/stratum/engine"
)

// gateCmd is "stratum gate approve|reject|revise RUN STEP": resolve a gate
// that waits for a person.
type gateCmd struct {
	token      string
	note       string
	resolvedBy string
}

func (*gateCmd) Name() string { return "gate" }
func (*gateCmd) Synopsis() string {
	return "approve|reject|revise RUN STEP [--token T] [--note TEXT] [--resolved-by WHO]"
}
func (*gateCmd) Short() string { return "approve, reject (kill) or revise a waiting gate" }
func (*gateCmd) Long() string {
	return `Gate resolves the gate STEP of run RUN ("stratum query gates" lists them; a
gate inside a subflow is RUNSTEP/GATE). reject is the engine decision kill.

Without --token the decision applies to the gate round the command reads.
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
      (stale_token), ...

A stratum run waiting at this gate in another terminal continues as soon
as the decision is recorded.`
}

func (c *gateCmd) SetFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.token, "token", "", "apply only to the gate round with this gate `TOKEN`")
	fs.StringVar(&c.note, "note", "", "a note explaining the decision, as `TEXT` (recorded in the run)")
	fs.StringVar(&c.resolvedBy, "resolved-by", "human", "who decided, `WHO`: human, agent or system (recorded in the run)")
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
		return usagef("expected approve|reject|revise RUN STEP, got %d arguments", len(args))
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
		return usagef("unknown decision %q (want approve, reject or revise)", args[0])
	}
	switch c.resolvedBy {
	case "human", "agent", "system":
	default:
		return usagef("--resolved-by must be human, agent or system, not %q", c.resolvedBy)
	}
	runID, stepID := args[1], args[2]
	if err := checkRunID(env, runID); err != nil {
		return err
	}
	sys, err := openSystem(env, systemConfig{})
	if err != nil {
		return fail(env, "INVALID", err.Error())
	}
	defer sys.Close()
	e := sys.engine
	conflict := func(detail string) error {
		_ = writeJSON(env.Stdout, conflictDoc{SchemaVersion: schemaVersion, Conflict: true, FlowID: runID, StepID: stepID, Detail: detail})
		fmt.Fprintf(env.Stderr, "stratum gate: %s\n", detail)
		return exitCode(ExitUsage)
	}

	status, err := e.Status(ctx, runID)
	if isNotFound(err) {
		return fail(env, "NOT_FOUND", fmt.Sprintf("Flow '%s' not found", runID))
	}
	if err != nil {
		return fail(env, engineCode(err), err.Error())
	}
	if status.Status != engine.StatusRunning {
		if status.Status == engine.StatusCompleted {
			return conflict("Flow is already complete")
		}
		return conflict("Flow is already " + string(status.Status))
	}
	gates, err := e.ListGates(ctx, runID)
	if err != nil {
		return fail(env, engineCode(err), err.Error())
	}
	var gate *engine.WaitingGate
	for i := range gates {
		if gates[i].StepID == stepID {
			gate = &gates[i]
		}
	}
	if gate == nil {
		plan, err := e.RunPlan(ctx, runID)
		if err != nil {
			return fail(env, "INVALID", err.Error())
		}
		local := stepID
		// A scoped id names a gate of the subflow its run step calls.
		flow := plan.EntryFlow()
		if parent, child, ok := strings.Cut(stepID, "/"); ok {
			if rs := flow.Step(parent); rs != nil && rs.Run != "" {
				flow, local = plan.Flow(rs.Run), child
			} else {
				flow = nil
			}
		}
		if flow == nil || flow.Step(local) == nil || flow.Step(local).Gate == nil {
			waiting := make([]string, len(gates))
			for i, g := range gates {
				waiting[i] = g.StepID
			}
			msg := fmt.Sprintf("step '%s' of run '%s' is not a gate step", stepID, runID)
			if flow == nil || flow.Step(local) == nil {
				msg = fmt.Sprintf("run '%s' has no step '%s'", runID, stepID)
			}
			if len(waiting) > 0 {
				msg += fmt.Sprintf(" (gates waiting: %s)", strings.Join(waiting, ", "))
			}
			return fail(env, "not_a_gate_step", msg)
		}
		return conflict("gate is not awaiting a decision")
	}
	token := gate.GateToken
	if c.token != "" {
		token = c.token
	}
	resp, err := e.ResolveGate(ctx, engine.GateRequest{RunID: runID, StepID: stepID, Decision: decision, GateToken: token,
		Rationale: c.note, ResolvedBy: c.resolvedBy})
	if err != nil {
		if errors.Is(err, engine.ErrNotAwaiting) {
			return conflict("gate is not awaiting a decision")
		}
		return fail(env, engineCode(err), err.Error())
	}
	return writeJSON(env.Stdout, gateResult{
		SchemaVersion: schemaVersion, OK: true, FlowID: runID, StepID: stepID, Outcome: decision,
		Result: gateOutcome(decision, gate, resp), Status: resp.Status, Note: c.note, ResolvedBy: c.resolvedBy,
	})
}

// gateOutcome names what the decision led to, from the gate's own route
// (spec/cli.md 6 step 6).
func gateOutcome(decision engine.Decision, g *engine.WaitingGate, resp *engine.Response) string {
	target := map[engine.Decision]string{engine.DecisionApprove: g.OnApprove, engine.DecisionRevise: g.OnRevise, engine.DecisionKill: g.OnKill}[decision]
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
