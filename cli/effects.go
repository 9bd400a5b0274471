package cli

import (
	"errors"
	"fmt"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/ir"
	"github.com/stratum-go/stratum/policy"
)

// listEffects says, before a run starts or resumes, every effect its spec
// may cause beyond handing do steps to agents (docs/policy.md), and the
// refusal of each one the policy forbids. It reports whether all are
// allowed.
func listEffects(say func(string, ...any), p *policy.Policy, plan *ir.Plan) bool {
	effects := engine.SpecEffects(plan)
	if len(effects) == 0 {
		return true
	}
	ok := true
	say("effects this run may cause (docs/policy.md):")
	for _, f := range effects {
		if err := p.Allow(f); err != nil {
			ok = false
			say("  refused: %v", err)
			continue
		}
		say("  %s", effectLine(f))
	}
	return ok
}

// effectLine is an allowed effect, with its time limit when it has one.
func effectLine(f engine.Effect) string {
	if f.Kind == engine.EffectCommand && f.Timeout > 0 {
		return fmt.Sprintf("%s (time limit %s)", f, f.Timeout)
	}
	return f.String()
}

// isWorkspaceRefusal reports a plan refused for its workspace root.
func isWorkspaceRefusal(err error) bool {
	return errors.Is(err, policy.ErrOutsideRoots)
}
