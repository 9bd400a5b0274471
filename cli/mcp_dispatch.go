package cli

import (
	"context"
	"fmt"
	"sort"

	"github.com/stratum-go/stratum/agent"
	"github.com/stratum-go/stratum/engine"
)

// agentDispatcher runs the items of engine-dispatched fanouts with agent
// connectors: it is the glue between engine.Dispatcher and agent.Connector
// (neither package may import the other).
type agentDispatcher struct {
	resolver *agent.Resolver
	// override is the --agent value; empty uses each stage's agent:.
	override string
}

func (d *agentDispatcher) Dispatch(ctx context.Context, req engine.DispatchRequest) (engine.DispatchResult, error) {
	conn, err := d.resolver.Resolve(d.override, req.Agent)
	if err != nil {
		return engine.DispatchResult{}, err
	}
	ar := agent.Request{
		RunID:    req.RunID,
		StepID:   fmt.Sprintf("%s/%d", req.StepID, req.ItemIndex),
		Task:     req.Prompt,
		Agent:    req.Agent,
		Attempt:  req.Attempt,
		Contract: agentContract(req.Contract),
		Workdir:  req.Workdir,
	}
	if f := req.PreviousFailure; f != nil {
		ar.PreviousFailure = &agent.Failure{Attempt: f.Attempt, Reason: f.Reason}
	}
	res, err := conn.Run(ctx, ar)
	if err != nil {
		return engine.DispatchResult{}, err
	}
	out := engine.DispatchResult{Output: res.Output, Failure: res.Failure}
	if u := res.Usage; u != nil {
		out.Usage.Tokens = u.Tokens
		if u.USD != nil {
			out.Usage.USD = *u.USD
		}
	}
	if tm := res.Telemetry; tm != nil {
		out.Telemetry = &engine.Telemetry{DurationMs: float64(tm.DurationMs), Model: tm.Model}
		out.Usage.MS = float64(tm.DurationMs)
	}
	return out, nil
}

// agentContract describes an engine contract for an agent: the root
// contract's fields, then every other contract, by name. The engine's
// contract maps do not keep the spec's field order, so fields are sorted.
func agentContract(c *engine.Contract) *agent.Contract {
	if c == nil {
		return nil
	}
	root := &agent.Contract{Name: c.Root, Fields: contractFields(c.Contracts[c.Root])}
	names := make([]string, 0, len(c.Contracts))
	for name := range c.Contracts {
		if name != c.Root {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		root.Contracts = append(root.Contracts, agent.Contract{Name: name, Fields: contractFields(c.Contracts[name])})
	}
	return root
}

func contractFields(m map[string]string) []agent.Field {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	fs := make([]agent.Field, len(names))
	for i, name := range names {
		fs[i] = agent.Field{Name: name, Type: m[name]}
	}
	return fs
}
