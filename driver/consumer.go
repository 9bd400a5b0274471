package driver

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/stratum-go/stratum/internal/worktree"
)

// consumerTrees keeps the worktrees of consumer fanout items with worktree
// isolation. For a consumer fanout the engine isolates nothing: whoever
// executes the items does, and in `stratum run` that is the driver.
//
// An item's worktree is made at its first attempt and reused by its later
// stages and retries; its changes are captured after its final stage and
// handed to the engine with the item's report (StepResult.Patch), which
// keeps them durably with the item's success and merges them when the
// fanout settles, exactly as for engine fanouts: one durable merge for
// both (docs/engine.md, "Worktree isolation"). The worktree is removed
// once the item is over.
type consumerTrees struct {
	// admin serialises making and removing worktrees (git does not
	// support concurrent `git worktree add` on one repository).
	admin sync.Mutex
	mu    sync.Mutex
	items map[string]*consumerItem // by itemKey
}

type consumerItem struct {
	run, step string
	index     int
	epoch     int
	wt        *worktree.Worktree
}

func newConsumerTrees() *consumerTrees { return &consumerTrees{items: map[string]*consumerItem{}} }

// itemKey names an item of one round (epoch) of a fanout: a revise
// re-runs the items in fresh worktrees.
func itemKey(run, step string, epoch, index int) string {
	return run + "\x00" + step + "\x00" + strconv.Itoa(epoch) + "\x00" + strconv.Itoa(index)
}

// acquire returns the item's worktree, making it (after removing what an
// earlier drive left) on first use.
func (c *consumerTrees) acquire(ctx context.Context, workspace, run, step string, epoch, index int, notice func(string)) (*worktree.Worktree, error) {
	key := itemKey(run, step, epoch, index)
	c.mu.Lock()
	it := c.items[key]
	c.mu.Unlock()
	if it != nil {
		return it.wt, nil
	}
	c.admin.Lock()
	wt, err := worktree.Create(ctx, worktree.Spec{Workspace: workspace, Prefix: worktree.Prefix(run, step, index)})
	c.admin.Unlock()
	if err != nil {
		return nil, err
	}
	for _, dir := range wt.Removed {
		notice("removed leftover worktree " + dir)
	}
	notice(fmt.Sprintf("%s/%d: working in worktree %s", step, index, wt.Dir))
	c.mu.Lock()
	c.items[key] = &consumerItem{run: run, step: step, index: index, epoch: epoch, wt: wt}
	c.mu.Unlock()
	return wt, nil
}

// capture returns the item's changes after its final stage.
func (c *consumerTrees) capture(ctx context.Context, run, step string, epoch, index int) ([]byte, error) {
	c.mu.Lock()
	it := c.items[itemKey(run, step, epoch, index)]
	c.mu.Unlock()
	if it == nil {
		return nil, fmt.Errorf("%s/%d: the item's worktree is gone", step, index)
	}
	return it.wt.Capture(ctx, 0)
}

// done removes the worktree of an item that is over.
func (c *consumerTrees) done(ctx context.Context, run, step string, epoch, index int) {
	key := itemKey(run, step, epoch, index)
	c.mu.Lock()
	it := c.items[key]
	delete(c.items, key)
	c.mu.Unlock()
	if it == nil {
		return
	}
	c.admin.Lock()
	defer c.admin.Unlock()
	_ = it.wt.Remove(ctx)
}

// discard removes a fanout step's worktrees.
func (c *consumerTrees) discard(ctx context.Context, run, step string) {
	c.mu.Lock()
	var gone []*consumerItem
	for k, it := range c.items {
		if it.run == run && (step == "" || it.step == step) {
			gone = append(gone, it)
			delete(c.items, k)
		}
	}
	c.mu.Unlock()
	c.admin.Lock()
	defer c.admin.Unlock()
	for _, it := range gone {
		_ = it.wt.Remove(ctx)
	}
}
