package web

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stratum-go/stratum/store"
)

// The chain badge of a run page: the verdict of the store's Verify (every
// event's hash over its content and its predecessor's, from the first to
// the head the state records). A run page renders again at every event of
// a live run, and Verify reads the whole log, so its verdict is kept for
// the head it was given at: a run's page reads the run's log through the
// engine's audit anyway, which re-checks every event's hash and the chain
// up to the head, so an edit made since is caught there (the page then
// verifies again and shows where the chain breaks).

type chainVerdict struct {
	seq     int64
	updated time.Time
	view    chainView
}

type chainCache struct {
	mu   sync.Mutex
	runs map[string]chainVerdict
}

// maxChains bounds the verdicts kept; when full the cache starts again.
const maxChains = 256

// check returns the verdict on runID's chain at head seq (updated at
// updated); seq < 0 verifies afresh without keeping the verdict.
func (c *chainCache) check(ctx context.Context, ch Chain, runID string, seq int64, updated time.Time) chainView {
	if seq >= 0 {
		c.mu.Lock()
		v, ok := c.runs[runID]
		c.mu.Unlock()
		if ok && v.seq == seq && v.updated.Equal(updated) {
			return v.view
		}
	}
	rep, err := ch.Verify(ctx, runID, store.VerifyOptions{})
	var ce *store.CorruptError
	var view chainView
	switch {
	case errors.As(err, &ce):
		view = chainView{Checked: true, Problem: ce.Error()}
	case err != nil:
		view = chainView{Problem: "the chain could not be checked: " + err.Error()}
	default:
		view = chainView{Checked: true, OK: true, Events: rep.Events, Head: rep.Head.Hash}
		if rep.Tail.Bytes > 0 {
			view.Tail = fmt.Sprintf("%d bytes after the head were written by an interrupted update (never acknowledged); the next update keeps them aside and records that in a repair event", rep.Tail.Bytes)
		}
	}
	if seq >= 0 && view.OK && rep.Head.Seq == seq {
		c.mu.Lock()
		if c.runs == nil || len(c.runs) >= maxChains {
			c.runs = map[string]chainVerdict{}
		}
		c.runs[runID] = chainVerdict{seq: seq, updated: updated, view: view}
		c.mu.Unlock()
	}
	return view
}
