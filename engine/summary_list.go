package engine

import (
	"cmp"
	"context"
	"errors"
	"iter"
	"slices"
	"strings"
	"sync"

	"github.com/stratum-go/stratum/store"
)

// ListRuns lists every run of the store, newest first, from the runs'
// summaries. A run that cannot be read is listed with its error rather
// than hiding the others. From a store.Scanner each summary is decoded
// as the store hands it out, while it reads the next (docs/engine.md,
// "Listings").
func (e *Engine) ListRuns(ctx context.Context) ([]RunSummary, error) {
	if sc, ok := e.store.(store.Scanner); ok {
		runs, err := e.scanRuns(ctx, sc)
		if err != nil {
			return nil, err
		}
		keys := runs.sorted()
		out := make([]RunSummary, len(keys))
		for k, key := range keys {
			out[k] = runs.at(key.i).s
		}
		return out, nil
	}
	return e.listRuns(ctx)
}

// ListRunsSeq is ListRuns as a sequence, without the slice: for a
// listing printed once ("stratum query flows"), whose 10,000 summaries
// would otherwise be copied into a new slice only to be read once. The
// sequence may be ranged over more than once; the summaries are the
// engine's, not to be changed.
func (e *Engine) ListRunsSeq(ctx context.Context) (iter.Seq[*RunSummary], error) {
	if sc, ok := e.store.(store.Scanner); ok {
		runs, err := e.scanRuns(ctx, sc)
		if err != nil {
			return nil, err
		}
		keys := runs.sorted()
		return func(yield func(*RunSummary) bool) {
			for _, key := range keys {
				if !yield(&runs.at(key.i).s) {
					return
				}
			}
		}, nil
	}
	all, err := e.listRuns(ctx)
	if err != nil {
		return nil, err
	}
	return func(yield func(*RunSummary) bool) {
		for i := range all {
			if !yield(&all[i]) {
				return
			}
		}
	}, nil
}

// listRuns is ListRuns from List: the summaries decoded by a few
// workers once the store has read them all.
func (e *Engine) listRuns(ctx context.Context) ([]RunSummary, error) {
	infos, err := e.store.List(ctx)
	if err != nil {
		return nil, err
	}
	// Decoding the summaries is most of a long listing's CPU: a few
	// workers share it.
	all := make([]RunSummary, len(infos))
	gone := make([]bool, len(infos))
	workers := min(4, max(1, len(infos)/512))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			var d listDecoder
			var s storedSummary // one per worker: json.Unmarshal's target is on the heap
			for i := w; i < len(infos); i += workers {
				info := infos[i]
				s = storedSummary{}
				all[i], gone[i] = e.listedRun(ctx, info, &d, &s)
			}
		})
	}
	wg.Wait()
	return newestFirst(all, gone), nil
}

// listedRun is what a listing shows of the run info names (its summary
// read into s by listSummary), or gone when the run no longer exists; a
// run that cannot be read is listed with the error.
func (e *Engine) listedRun(ctx context.Context, info store.RunInfo, d *listDecoder, s *storedSummary) (r RunSummary, gone bool) {
	switch err := e.listSummary(ctx, info, d, s); {
	case errors.Is(err, ErrRunNotFound):
		return RunSummary{}, true
	case err != nil:
		return RunSummary{RunID: info.ID, UpdatedAt: info.UpdatedAt, Error: err.Error()}, false
	}
	return listed(s), false
}

// listed is what a listing shows of a run with summary s: a running run
// whose cancel was requested as cancelled.
func listed(s *storedSummary) RunSummary {
	r := s.RunSummary
	if r.Status == StatusRunning && s.CancelRequested {
		r.Status = StatusCancelled
	}
	return r
}

// scanRuns is ListRuns from a store.Scanner: a summary is decoded while
// the store hands it out (the PostgreSQL store: while the server sends
// the next rows), on the scan's goroutine, which would otherwise wait
// for them. The runs without a summary it can read are read after the
// scan, which may hold the store's connection. The store's order is
// gone, so ties of the creation time go by the id List sorts by, as
// ListRuns orders them from List.
func (e *Engine) scanRuns(ctx context.Context, sc store.Scanner) (*scannedRuns, error) {
	var (
		d      listDecoder
		s      storedSummary
		runs   scannedRuns
		unread []store.RunInfo
	)
	err := sc.ScanRuns(ctx, func(info store.RunInfo) error {
		s = storedSummary{}
		if d.decode(info.Summary, info.ID, &s) {
			runs.add(info.ID, listed(&s))
			return nil
		}
		info.Summary = nil // the store's memory: the run is read instead
		unread = append(unread, info)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, info := range unread {
		s = storedSummary{}
		if r, gone := e.listedRun(ctx, info, &d, &s); !gone {
			runs.add(info.ID, r)
		}
	}
	return &runs, nil
}

// scannedRuns collects a scan's summaries, each with the store's id, in
// chunks of scanChunk that are never moved (appending to one slice would
// copy 10,000 summaries several times over as it grows).
type scannedRuns struct {
	chunks [][]scannedRun
	n      int
}

type scannedRun struct {
	id string
	s  RunSummary
}

const scanChunk = 1024

func (r *scannedRuns) add(id string, s RunSummary) {
	if r.n%scanChunk == 0 {
		r.chunks = append(r.chunks, make([]scannedRun, 0, scanChunk))
	}
	last := &r.chunks[len(r.chunks)-1]
	*last = append(*last, scannedRun{id, s})
	r.n++
}

func (r *scannedRuns) at(i int32) *scannedRun { return &r.chunks[i/scanChunk][i%scanChunk] }

// sorted are the keys of the runs, newest first, ties by id.
func (r *scannedRuns) sorted() []newestKey {
	keys := make([]newestKey, r.n)
	for i := range keys {
		keys[i] = keyOf(&r.at(int32(i)).s, i)
	}
	sortNewest(keys, func(a, b int32) int { return strings.Compare(r.at(a).id, r.at(b).id) })
	return keys
}

// newestKey is what a listing sorts a run by: its creation time (as
// seconds and nanoseconds, the order of time.Time.Compare for times
// without a monotonic reading, which decoded times never have) and its
// index.
type newestKey struct {
	sec  int64
	nsec int32
	i    int32
}

func keyOf(s *RunSummary, i int) newestKey {
	return newestKey{sec: s.CreatedAt.Unix(), nsec: int32(s.CreatedAt.Nanosecond()), i: int32(i)}
}

// sortNewest sorts keys newest first; ties by tie of the two indices
// when tie is not nil, then by index. Unstable, but no two keys are
// equal: the order is the one a stable sort on the time alone gives to
// runs in the order of their index (or of tie). 16-byte keys are sorted
// rather than the summaries (about 200 bytes) or indices into them (each
// comparison two reads far apart).
func sortNewest(keys []newestKey, tie func(a, b int32) int) {
	slices.SortFunc(keys, func(a, b newestKey) int {
		if c := cmp.Compare(b.sec, a.sec); c != 0 {
			return c
		}
		if c := cmp.Compare(b.nsec, a.nsec); c != 0 {
			return c
		}
		if tie != nil {
			if c := tie(a.i, b.i); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.i, b.i)
	})
}

// newestFirst is all without the gone runs, newest first and ties in the
// store's order, the summaries moved into place in all itself when no
// run is gone (docs/engine.md, "Listings").
func newestFirst(all []RunSummary, gone []bool) []RunSummary {
	keys := make([]newestKey, 0, len(all))
	for i := range all {
		if !gone[i] {
			keys = append(keys, keyOf(&all[i], i))
		}
	}
	sortNewest(keys, nil)
	if len(keys) < len(all) {
		out := make([]RunSummary, len(keys))
		for k, key := range keys {
			out[k] = all[key.i]
		}
		return out
	}
	// Every run stays: all[k] = all[keys[k].i] for every k, one cycle of
	// the permutation at a time (a key whose i is -1 is in place).
	for start := range keys {
		if keys[start].i < 0 {
			continue
		}
		held := all[start]
		for k := start; ; {
			from := int(keys[k].i)
			keys[k].i = -1
			if from == start {
				all[k] = held
				break
			}
			all[k] = all[from]
			k = from
		}
	}
	return all
}
