package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/stratum-go/stratum/engine"
)

// show is "stratum gate show RUN STEP [--json]": the view of one waiting
// gate (or interrupted attempt) for the person deciding it.
func (c *gateCmd) show(ctx context.Context, env *Env, runID, stepID string) error {
	if c.digest != "" || c.token != "" || c.note != "" {
		return usagef("gate show takes no --digest, --token or --note (they go with a decision)")
	}
	// Errors are JSON on stdout only with --json: the text form is for a
	// person, who reads stderr.
	refuse := func(code, msg string) error {
		if c.json {
			return fail(env, code, msg)
		}
		fmt.Fprintf(env.Stderr, "stratum gate: %s\n", msg)
		return exitCode(ExitFailure)
	}
	if msg := runIDProblem(runID); msg != "" {
		return refuse("INVALID", msg)
	}
	sys, err := openSystem(env, systemConfig{})
	if err != nil {
		return refuse("INVALID", err.Error())
	}
	defer sys.Close()
	views, err := sys.engine.GateViews(ctx, runID)
	switch {
	case isNotFound(err):
		return refuse("NOT_FOUND", fmt.Sprintf("Flow '%s' not found", runID))
	case err != nil:
		return refuse(engineCode(err), err.Error())
	}
	var waiting []string
	for _, v := range views {
		if v.StepID != stepID {
			waiting = append(waiting, v.StepID)
			continue
		}
		if c.json {
			return writeJSON(env.Stdout, v)
		}
		writeGateView(env.Stdout, v)
		return nil
	}
	msg := fmt.Sprintf("%s of run %s is not waiting for a decision", stepID, runID)
	if len(waiting) > 0 {
		msg += fmt.Sprintf(" (waiting: %s)", strings.Join(waiting, ", "))
	} else {
		msg += " (nothing of the run is)"
	}
	return refuse(engine.CodeNotAwaiting, msg)
}
