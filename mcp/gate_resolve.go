package mcp

import (
	"context"

	"github.com/stratum-go/stratum/engine"
)

type gateResolveIn struct {
	RunID     string      `json:"runId" jsonschema:"the run's id"`
	StepID    string      `json:"stepId" jsonschema:"the gate's step id (as listed in waiting; <runStep>/<gate> inside a subflow)"`
	Decision  decisionArg `json:"decision" jsonschema:"the person's decision: approve (continue), revise (send the work back to the gate's on_revise step for another round), kill (stop, or follow on_kill)"`
	GateToken string      `json:"gateToken" jsonschema:"the gate's current token, from stratum_gates; it proves the decision was made on the current round"`
	Digest    string      `json:"digest,omitempty" jsonschema:"the digest of the content under review you showed the person (from stratum_gates): the decision is refused if the content changed"`
	Rationale string      `json:"rationale,omitempty" jsonschema:"the person's reason for the decision, in their words; recorded in the run's audit trail"`
	// ResolvedBy is free text on purpose: a person's name is as useful as a role.
	ResolvedBy string `json:"resolvedBy,omitempty" jsonschema:"who decided: human (the default meaning when a person answered you), agent, system, or a name; recorded in the audit trail"`
}

func (s *server) gateResolveTool() tool {
	return newTool(s, toolMeta{
		name:  "stratum_gate_resolve",
		title: "Record a person's gate decision",
		description: `Apply a person's decision to a gate the run is waiting on (a running answer lists it in waiting with kind gate, or interrupted: an attempt died and approve runs it again). Only call it with the decision the user gave you; never decide a gate yourself unless the user explicitly asked you to. Read the gate with stratum_gates first, show the person what is under review, and pass its gateToken and the digest of what you showed: the decision is refused if the work under review changed.
Returns the run's next state: ready (approve continues; revise makes the reviewed step ready again), running, completed, or failed (kill with no on_kill route). A token from an older round (or content that changed since you read it) is refused with error.code stale_token, the current state and the gate's current view in error.gate; revise on a gate whose on_revise is null is refused with error.code missing_on_revise (the token stays valid for approve or kill); nothing changes on a refusal.
ready lists only the entries the decision issued; stillReady counts those you already have. The rationale and resolvedBy you pass are recorded in the gate_resolved event of the audit.
Example: stratum_gate_resolve {"runId": "4b1f…", "stepId": "review", "decision": "approve", "gateToken": "77d0…", "digest": "5c3a…", "rationale": "the user said it reads well", "resolvedBy": "human"}`,
		statuses: runStatuses(engine.StatusReady, engine.StatusRunning, engine.StatusCompleted,
			engine.StatusFailed, engine.StatusBudgetExhausted),
	}, func(ctx context.Context, c *call, in gateResolveIn) (*engine.Response, error) {
		r, err := s.eng.ResolveGate(ctx, engine.GateRequest{RunID: in.RunID, StepID: in.StepID,
			Decision: engine.Decision(in.Decision), GateToken: in.GateToken, Digest: in.Digest, Rationale: in.Rationale, ResolvedBy: in.ResolvedBy,
			OnlyNew: true})
		if err == nil && s.bg != nil {
			s.bg.Kick() // a paused background run continues at once
		}
		return r, err
	})
}
