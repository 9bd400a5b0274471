package web

import (
	"context"
	"sync"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/ir"
)

// planCache keeps the compiled plans of the runs shown, by revision
// digest: a revision's plan never changes, and asking the engine for it
// reads the run's whole log.
type planCache struct {
	mu    sync.Mutex
	plans map[string]*ir.Plan
}

// maxPlans bounds the cache; when full it starts again.
const maxPlans = 64

func (c *planCache) get(ctx context.Context, eng *engine.Engine, runID, digest string) (*ir.Plan, error) {
	c.mu.Lock()
	p := c.plans[digest]
	c.mu.Unlock()
	if p != nil && digest != "" {
		return p, nil
	}
	p, err := eng.RunPlan(ctx, runID)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.plans == nil || len(c.plans) >= maxPlans {
		c.plans = map[string]*ir.Plan{}
	}
	c.plans[digest] = p
	return p, nil
}
