package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/stratum-go/stratum/engine"
)

// Live updates (docs/serve.md, "Live updates"): each open page holds a
// server-sent event stream, and the stream polls the engine for it: a run
// page with the run's event cursor (Engine.Poll), a list page with a
// fingerprint of the run listing. When something changed the stream
// sends a "change" event and the page fetches itself again and replaces
// the parts whose version changed, keeping the others (and whatever the
// person was typing) as they were. Polling costs at most a fifth of the
// server's time: a stream whose poll took long waits longer.

// keepAlive is how often an idle stream sends a comment, so that proxies
// and the browser keep it open.
const keepAlive = 15 * time.Second

func (s *Server) live(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var poll func(ctx context.Context, since string) (string, error)
	switch {
	case q.Get("run") != "":
		runID := q.Get("run")
		poll = func(ctx context.Context, since string) (string, error) {
			cur, _ := strconv.ParseInt(since, 10, 64)
			rep, err := s.eng.Poll(ctx, runID, cur)
			if errors.Is(err, engine.ErrInvalidCursor) {
				return "0", nil // the page is from another history: it reloads
			}
			if err != nil {
				return since, err
			}
			if rep.NextCursor == cur {
				return since, nil
			}
			return strconv.FormatInt(rep.NextCursor, 10), nil
		}
	case q.Get("list") != "":
		poll = func(ctx context.Context, since string) (string, error) {
			runs, err := s.eng.ListRuns(ctx)
			if err != nil {
				return since, err
			}
			return listFingerprint(runs), nil
		}
	default:
		http.Error(w, "live: say run=ID or list=1", http.StatusBadRequest)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "live: streaming is not supported here", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 2000\n\n")
	flusher.Flush()
	ctx := r.Context()
	since := q.Get("since")
	lastSent := time.Now()
	for {
		start := time.Now()
		next, err := poll(ctx, since)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			// The page shows what went wrong when it reloads; a stream
			// cannot say more than that something did.
			fmt.Fprintf(w, "event: failed\ndata: %s\n\n", strconv.Quote(err.Error()))
			flusher.Flush()
			return
		}
		if next != since {
			since = next
			fmt.Fprintf(w, "event: change\ndata: %s\n\n", since)
			flusher.Flush()
			lastSent = time.Now()
		} else if time.Since(lastSent) > keepAlive {
			fmt.Fprint(w, ": keep-alive\n\n")
			flusher.Flush()
			lastSent = time.Now()
		}
		wait := max(s.opts.PollInterval, 4*time.Since(start))
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// listFingerprint digests what the list pages show of every run, so that
// a list stream notices any change.
func listFingerprint(runs []engine.RunSummary) string {
	type key struct {
		ID      string
		Status  engine.RunStatus
		Updated time.Time
		Waiting []engine.Waiting
		Error   string
	}
	ks := make([]key, len(runs))
	for i, r := range runs {
		ks[i] = key{r.RunID, r.Status, r.UpdatedAt, r.Waiting, r.Error}
	}
	return version(ks)
}
