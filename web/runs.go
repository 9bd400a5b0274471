package web

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/stratum-go/stratum/engine"
)

// The runs list (docs/serve.md, "Runs"): every run of the store, the ones
// waiting on a person first, then the running ones, then the rest, newest
// first within each; filtered by status and by text in the flow's name or
// the run's id.

type runRow struct {
	Key     string
	V       string
	RunID   string
	Flow    string
	Status  string
	Waiting []engine.Waiting
	// Person is set when a gate or an interrupted attempt waits for a
	// person.
	Person  bool
	Created string
	Age     string
	Updated string
	Error   string
}

type runsView struct {
	Status   string
	Q        string
	Statuses []string
	Rows     []runRow
	V        string
	SummaryV string
	Total    int
	Gates    int
}

// runFilters are the statuses the list filters by; "waiting" is a running
// run waiting on a person.
var runFilters = []string{"waiting", "running", "completed", "failed", "budget_exhausted", "cancelled"}

func waitsOnPerson(ws []engine.Waiting) bool {
	return slices.ContainsFunc(ws, func(w engine.Waiting) bool {
		return w.Kind == engine.WaitGate || w.Kind == engine.WaitInterrupted
	})
}

func (s *Server) runsPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	runs, err := s.eng.ListRuns(ctx)
	if err != nil {
		s.errorPage(w, http.StatusInternalServerError, "Runs", "The runs could not be listed: "+err.Error())
		return
	}
	q := r.URL.Query()
	v := runsView{Status: q.Get("status"), Q: strings.TrimSpace(q.Get("q")), Statuses: runFilters, Total: len(runs)}
	if !slices.Contains(runFilters, v.Status) {
		v.Status = ""
	}
	t := now()
	rank := func(rs engine.RunSummary) int {
		switch {
		case rs.Status == engine.StatusRunning && waitsOnPerson(rs.Waiting):
			return 0
		case rs.Status == engine.StatusRunning:
			return 1
		}
		return 2
	}
	ordered := slices.Clone(runs)
	slices.SortStableFunc(ordered, func(a, b engine.RunSummary) int { return rank(a) - rank(b) })
	for _, rs := range ordered {
		person := rs.Status == engine.StatusRunning && waitsOnPerson(rs.Waiting)
		if person {
			v.Gates++
		}
		switch {
		case v.Status == "waiting" && !person:
			continue
		case v.Status != "" && v.Status != "waiting" && string(rs.Status) != v.Status:
			continue
		case v.Q != "" && !strings.Contains(strings.ToLower(rs.Flow+" "+rs.RunID), strings.ToLower(v.Q)):
			continue
		}
		row := runRow{Key: rs.RunID, RunID: rs.RunID, Flow: rs.Flow, Status: string(rs.Status), Waiting: rs.Waiting, Person: person,
			Created: stamp(rs.CreatedAt), Age: ago(rs.CreatedAt, t), Updated: stamp(rs.UpdatedAt), Error: rs.Error}
		if row.Status == "" {
			row.Status = "unreadable"
		}
		row.V = version(row)
		v.Rows = append(v.Rows, row)
	}
	v.V = version(v.Rows)
	v.SummaryV = version([]int{len(v.Rows), v.Total, v.Gates})
	s.render(w, http.StatusOK, "runs", page{Title: "Runs", Nav: "runs", Live: "/live?list=1", Cursor: listFingerprint(runs), Content: v})
}

// runURL is the address of a run's page.
func runURL(runID string) string { return "/runs/" + url.PathEscape(runID) }
