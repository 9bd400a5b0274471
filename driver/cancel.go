package driver

import (
	"context"
	"time"

	"github.com/stratum-go/stratum/engine"
)

// DefaultCancelWait bounds how long a cancel waits for the agents of a
// run to be torn down (STRATUM_CANCEL_TIMEOUT_MS in the reference).
const DefaultCancelWait = 15 * time.Second

// Cancel cancels a run from any process (stratum_flow_cancel, stratum
// flow cancel): the engine settles it (engine.Cancel: every issuance is
// burnt), then its agents are torn down wherever they run. The agent runs
// tagged with the flow are stopped through their records (agents may be
// nil when there is no agent-run store); a process driving the run (this
// one, through bg, which may be nil, or another one holding its lease)
// sees the cancel, stops its agents and gives the lease up, which Cancel
// waits for, up to wait. The result's Agents counts what was done and
// Acknowledged says whether every agent is accounted for.
func Cancel(ctx context.Context, e *engine.Engine, agents *AgentRuns, bg *Background, runID, reason string, wait time.Duration) (*engine.CancelResult, error) {
	res, err := e.Cancel(ctx, runID, reason)
	if err != nil {
		return nil, err
	}
	if !res.FlowSettled {
		return res, nil // it had finished: nothing to tear down
	}
	if wait <= 0 {
		wait = DefaultCancelWait
	}
	acked := true
	if agents != nil {
		sum, err := agents.CancelFlow(ctx, runID)
		if err != nil {
			acked = false
			sum.Unresolved++
		}
		res.Agents = sum
		if sum.Unreachable > 0 || sum.Unresolved > 0 || sum.Unreaped > 0 {
			acked = false
		}
	}
	if bg != nil {
		bg.StopDriving(runID)
	}
	if !awaitRelease(ctx, e, runID, wait) {
		acked = false
		res.Agents.Unsettled++
	}
	res.Acknowledged = acked
	return res, nil
}

// awaitRelease waits, up to wait, until no process holds the run's lease:
// its driver stopped its agents (a driver stops them before it gives the
// lease up, and a dead one's died with it). It reports whether that
// happened in time.
func awaitRelease(ctx context.Context, e *engine.Engine, runID string, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for {
		info, err := e.BackgroundInfo(ctx, runID)
		if err != nil || info.Holder == "" {
			return err == nil
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(25 * time.Millisecond):
		}
	}
}
