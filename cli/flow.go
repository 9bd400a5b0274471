package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/stratum-go/stratum/driver"
	"github.com/stratum-go/stratum/engine"
)

// flowCmd is "stratum flow cancel RUN": settle a running run as cancelled.
type flowCmd struct {
	reason string
}

func (*flowCmd) Name() string     { return "flow" }
func (*flowCmd) Synopsis() string { return "cancel RUN [--reason TEXT]" }
func (*flowCmd) Short() string    { return "cancel a running run" }
func (*flowCmd) Long() string {
	return `Flow cancel settles run RUN as cancelled: every outstanding step, gate and
fanout item issuance is made void (later results and decisions are refused),
engine fanouts stop at their next boundary, and a flow_cancelled event
records what was voided. A stratum run driving RUN in another terminal
notices, stops its agents and exits 1; a server driving it in the
background stops its agents and gives the run's lease up, which this
command waits for (up to 15 seconds; acknowledged says whether it did).
Agent runs tagged with RUN (stratum_agent_run with flow) are stopped too.

Output (JSON) and exit status:
  {_schema_version, ok: true, flow_id, status, flowSettled, acknowledged,
   agents, burned, detail?}                                         0
      detail is already_cancelled for a repeat, already_<status> for a
      run that had already finished (then flowSettled is false)
  {_schema_version, conflict: true, flow_id, detail: "flow_not_found"}  2
  {_schema_version, ok: false, error, flow_id, message, ...}          1
      error is CANCELLATION_UNCONFIRMED (reason run_lock_held, with
      holderPid when known) or INVALID`
}

func (c *flowCmd) SetFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.reason, "reason", "", "why the run is cancelled, as `TEXT` (recorded in its event log)")
}

type cancelDoc struct {
	SchemaVersion string               `json:"_schema_version"`
	OK            bool                 `json:"ok"`
	FlowID        string               `json:"flow_id"`
	Status        engine.RunStatus     `json:"status"`
	FlowSettled   bool                 `json:"flowSettled"`
	Acknowledged  bool                 `json:"acknowledged"`
	Agents        engine.AgentSummary  `json:"agents"`
	Burned        *engine.BurnedTokens `json:"burned,omitempty"`
	Detail        string               `json:"detail,omitempty"`
}

type cancelRefusal struct {
	SchemaVersion string           `json:"_schema_version"`
	OK            bool             `json:"ok"`
	Error         string           `json:"error"`
	FlowID        string           `json:"flow_id"`
	Status        engine.RunStatus `json:"status,omitempty"`
	FlowSettled   bool             `json:"flowSettled"`
	Reason        string           `json:"reason,omitempty"`
	HolderPID     int              `json:"holderPid,omitempty"`
	Message       string           `json:"message"`
}

func (c *flowCmd) Run(ctx context.Context, env *Env, args []string) error {
	if len(args) != 2 || args[0] != "cancel" {
		return usagef("expected cancel RUN")
	}
	runID := args[1]
	refuse := func(doc cancelRefusal) error {
		doc.SchemaVersion, doc.FlowID = schemaVersion, runID
		_ = writeJSON(env.Stdout, doc)
		fmt.Fprintf(env.Stderr, "stratum flow cancel: %s\n", doc.Message)
		return exitCode(ExitFailure)
	}
	// An id that cannot name a run is an error, not "not found" (spec/cli.md
	// 2): the answer must not suggest that such a run could exist.
	if msg := runIDProblem(runID); msg != "" {
		return refuse(cancelRefusal{Error: "INVALID", Message: msg})
	}
	sys, err := openSystem(env, systemConfig{})
	if err != nil {
		return refuse(cancelRefusal{Error: "INVALID", Message: err.Error()})
	}
	defer sys.Close()
	e := sys.engine
	reason := c.reason
	if reason == "" {
		reason = "cancelled with stratum flow cancel"
	}
	// The agents of the run stop too, wherever they run: the agent runs
	// tagged with it, and the agents of the process driving it.
	agents, aerr := sys.openAgentRuns(env, driver.AgentRunOptions{})
	if aerr != nil {
		agents = nil
	}
	res, err := driver.Cancel(ctx, e, agents, nil, runID, reason, driver.DefaultCancelWait)
	if isNotFound(err) {
		_ = writeJSON(env.Stdout, conflictDoc{SchemaVersion: schemaVersion, Conflict: true, FlowID: runID, Detail: "flow_not_found"})
		fmt.Fprintf(env.Stderr, "stratum flow cancel: flow '%s' not found\n", runID)
		return exitCode(ExitUsage)
	}
	if err != nil {
		var ee *engine.Error
		if errors.Is(err, engine.ErrRunLocked) {
			pid := 0
			if errors.As(err, &ee) {
				pid = ee.HolderPID
			}
			return refuse(cancelRefusal{Error: "CANCELLATION_UNCONFIRMED", Status: engine.StatusRunning, Reason: "run_lock_held", HolderPID: pid, Message: err.Error()})
		}
		return refuse(cancelRefusal{Error: "INVALID", Message: err.Error()})
	}
	doc := cancelDoc{SchemaVersion: schemaVersion, OK: true, FlowID: runID, Status: res.Status,
		FlowSettled: res.FlowSettled, Acknowledged: res.Acknowledged, Agents: res.Agents, Detail: res.Reason}
	if res.Reason == "" {
		doc.Burned = &res.Burned
	}
	return writeJSON(env.Stdout, doc)
}
