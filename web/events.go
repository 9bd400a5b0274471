package web

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/stratum-go/stratum/engine"
)

// A run's events pages (docs/serve.md, "A run"): every event of the run,
// eventsPage at a time, read with the engine's audit narrowed to the
// events after a cursor and a limit, so that a page costs the same
// however long the run is. The run page lists only the latest events and
// links here for the others.

// eventsPage is how many events one events page lists.
const eventsPage = 1000

type eventsView struct {
	RunID  string
	Flow   string
	Status string
	RunURL string
	After  int64
	Events []eventRow
	// Earlier and Later are the addresses of the pages around this one
	// ("" at either end).
	Earlier string
	Later   string
}

// eventsURL is the address of a run's events page after seq.
func eventsURL(runID string, after int64) string {
	return runURL(runID) + "/events?after=" + strconv.FormatInt(after, 10)
}

func (s *Server) eventsPage(w http.ResponseWriter, r *http.Request) {
	runID := r.PathValue("run")
	after, err := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
	if err != nil || after < 0 {
		after = 0
	}
	var evs []engine.Event
	rep, err := s.eng.AuditStream(r.Context(), runID, engine.AuditOptions{EventsAfter: after, EventsLimit: eventsPage},
		engine.AuditVisitor{Event: func(ev engine.Event) error { evs = append(evs, ev); return nil }})
	switch {
	case errors.Is(err, engine.ErrInvalidCursor):
		s.errorPage(w, http.StatusNotFound, "Events", "The run has no events after "+strconv.FormatInt(after, 10)+": "+err.Error())
		return
	case err != nil:
		s.engineError(w, "Events", err)
		return
	}
	v := eventsView{RunID: runID, Flow: rep.Flow, Status: string(rep.Status), RunURL: runURL(runID), After: after, Events: eventRows(evs)}
	if after > 0 {
		// Seqs count the log's internal records too: the page before
		// this one starts at most eventsPage records earlier.
		v.Earlier = eventsURL(runID, max(0, after-eventsPage))
	}
	if rep.NextEventsAfter > 0 {
		v.Later = eventsURL(runID, rep.NextEventsAfter)
	}
	s.render(w, http.StatusOK, "events", page{Title: "Events of " + rep.Flow, Nav: "runs", Content: v})
}
