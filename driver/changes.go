package driver

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/internal/worktree"
)

// What a do step changed (docs/agents.md, "What a step changed"): when
// the run's workspace is in a git repository, the driver takes a snapshot
// of it (HEAD and the tree of the working files, through a temporary
// index: the user's index and files are never touched) before and after
// each attempt of a do step, and reports the two with the diff stat and
// the patch between them as the attempt's engine.Changes. The person
// deciding a gate after the step sees the stat (stratum gate show) and
// the patch (stratum diff). Worktree fanout items are not measured: their
// patch is captured in their own worktree.
//
// The snapshots see the whole workspace: when other agents of the run
// work in it at the same time (independent steps run concurrently), the
// stat says so, since their changes may be counted in this attempt's.

// workChanges measures the do-step attempts of one drive.
type workChanges struct {
	workspace string
	notice    func(string)
	// limit bounds a recorded patch (worktree.DefaultPatchLimit when 0).
	limit int

	once  sync.Once
	isGit bool // the workspace is in a git repository (checked once)

	mu     sync.Mutex
	active map[*measuring]bool
}

// measuring is one attempt being measured.
type measuring struct {
	id     string
	before worktree.Snapshot
	// others are the entries that worked in the workspace at some time
	// during this attempt.
	others map[string]bool
}

func newWorkChanges(workspace string, limit int, notice func(string)) *workChanges {
	return &workChanges{workspace: workspace, limit: limit, notice: notice, active: map[*measuring]bool{}}
}

// git reports whether the workspace is in a git repository.
func (w *workChanges) git(ctx context.Context) bool {
	w.once.Do(func() {
		if w.workspace == "" {
			return
		}
		_, err := worktree.Snap(ctx, w.workspace)
		w.isGit = err == nil
		if err != nil && !errors.Is(err, worktree.ErrNotRepository) && ctx.Err() == nil {
			w.notice(fmt.Sprintf("the changes of do steps are not recorded: %v", err))
		}
	})
	return w.isGit
}

// start is called before an attempt of entry id starts: for a do step in
// a git workspace it takes the snapshot the attempt's changes are
// measured from. Every attempt (measured or not) is counted as working in
// the workspace until its end is called; end(nil) reports nothing.
func (w *workChanges) start(ctx context.Context, id string, measure bool) (end func(ctx context.Context) *engine.Changes) {
	m := &measuring{id: id, others: map[string]bool{}}
	if measure && w.git(ctx) {
		before, err := worktree.Snap(ctx, w.workspace)
		if err != nil {
			if ctx.Err() == nil {
				w.notice(fmt.Sprintf("%s: the changes of this attempt are not recorded: %v", id, err))
			}
			measure = false
		}
		m.before = before
	} else {
		measure = false
	}
	w.mu.Lock()
	for o := range w.active {
		o.others[id] = true
		m.others[o.id] = true
	}
	w.active[m] = true
	w.mu.Unlock()
	return func(ctx context.Context) *engine.Changes {
		w.mu.Lock()
		delete(w.active, m)
		w.mu.Unlock()
		if !measure || ctx.Err() != nil {
			return nil
		}
		ch, err := w.compare(ctx, m)
		if err != nil {
			if ctx.Err() == nil {
				w.notice(fmt.Sprintf("%s: the changes of this attempt are not recorded: %v", id, err))
			}
			return nil
		}
		return ch
	}
}

// compare takes the snapshot after an attempt and describes its changes.
func (w *workChanges) compare(ctx context.Context, m *measuring) (*engine.Changes, error) {
	after, err := worktree.Snap(ctx, w.workspace)
	if err != nil {
		return nil, err
	}
	d, err := worktree.Compare(ctx, m.before, after, w.limit)
	if err != nil {
		return nil, err
	}
	ch := &engine.Changes{HeadBefore: m.before.Head, HeadAfter: after.Head, TreeBefore: m.before.Tree, TreeAfter: after.Tree,
		Stat: d.Stat, Patch: d.Patch}
	if d.Stat == "" && d.TooLarge == nil {
		return ch, nil // nothing changed
	}
	var notes []string
	if d.TooLarge != nil {
		ch.PatchOmitted, ch.PatchBytes = true, int(d.TooLarge.Size)
		notes = append(notes, fmt.Sprintf("the patch is %s, over the %s limit: it was not recorded (ignore generated files with .gitignore)",
			sizeText(d.TooLarge.Size), sizeText(int64(d.TooLarge.Limit))))
	}
	if len(m.others) > 0 {
		ids := make([]string, 0, len(m.others))
		for id := range m.others {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		notes = append(notes, fmt.Sprintf("%s worked in the same workspace at the same time: their changes may be counted here", strings.Join(ids, ", ")))
	}
	for _, n := range notes {
		if ch.Stat != "" {
			ch.Stat += "\n"
		}
		ch.Stat += "(" + n + ")"
	}
	return ch, nil
}

func sizeText(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}
