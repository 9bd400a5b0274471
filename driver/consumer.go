package driver

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/internal/worktree"
)

// consumerTrees keeps the worktrees of consumer fanout items with worktree
// isolation. For a consumer fanout the engine does no isolation and no
// merge (spec/engine.md 5.4): whoever executes the items does, and in
// `stratum run` that is the driver. (Engine-dispatched fanouts are
// isolated and merged by the engine itself.)
//
// An item's worktree is made at its first attempt and reused by its later
// stages and retries; its changes are captured after its final stage, kept
// in memory, and merged into the workspace (pre_merge first, items in
// index order) when the driver's own report settles the fanout. A drive
// stopped before that loses them; the gate that must follow a consumer
// worktree fanout lets a person check the workspace before the run goes
// on.
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
	patch     []byte
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

// capture records the item's changes after its final stage.
func (c *consumerTrees) capture(ctx context.Context, run, step string, epoch, index int) error {
	c.mu.Lock()
	it := c.items[itemKey(run, step, epoch, index)]
	c.mu.Unlock()
	if it == nil {
		return fmt.Errorf("%s/%d: the item's worktree is gone", step, index)
	}
	patch, err := it.wt.Capture(ctx, 0)
	if err != nil {
		return err
	}
	c.mu.Lock()
	it.patch = patch
	c.mu.Unlock()
	return nil
}

// has reports whether a fanout step of a run has item worktrees.
func (c *consumerTrees) has(run, step string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, it := range c.items {
		if it.run == run && it.step == step {
			return true
		}
	}
	return false
}

// settled acts on a consumer fanout the driver's report may have settled:
// succeeded in the round (epoch) its items ran in → merge its succeeded
// items' changes into the workspace; finished otherwise (failed, reset by
// a revise) → discard them. A merge failure is returned; the worktrees are
// removed either way once the fanout is over.
func (c *consumerTrees) settled(ctx context.Context, workspace, run, step string, st *engine.StepView, preMerge []string, notice func(string)) error {
	if st != nil && st.Status == engine.StepRunning && st.Fanout != nil {
		return nil // not over yet
	}
	defer c.discard(ctx, run, step)
	if st == nil || st.Status != engine.StepSucceeded || st.Fanout == nil {
		return nil
	}
	c.mu.Lock()
	var items []*consumerItem
	for _, fi := range st.Fanout.Items {
		it := c.items[itemKey(run, step, st.Epoch, fi.Index)]
		if fi.Status == engine.StepSucceeded && it != nil && len(it.patch) > 0 {
			items = append(items, it)
		}
	}
	c.mu.Unlock()
	if len(items) == 0 {
		return nil
	}
	sort.Slice(items, func(i, j int) bool { return items[i].index < items[j].index })
	for _, cmd := range preMerge {
		if err := worktree.RunCommand(ctx, workspace, cmd, 0); err != nil {
			return err
		}
	}
	for _, it := range items {
		if _, err := worktree.Apply(context.WithoutCancel(ctx), workspace, it.patch); err != nil {
			return fmt.Errorf("item %d: %w", it.index, err)
		}
		notice(fmt.Sprintf("%s/%d: changes merged into the workspace", step, it.index))
	}
	return nil
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
