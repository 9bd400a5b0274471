package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/stratum-go/stratum/engine"
)

// The gates page (docs/serve.md, "Gates"): everything waiting on a
// person, each with what is under review exactly as the engine's gate
// view gives it (the task and output of each step the gate follows, the
// patch of the workspace changes when there is one) and the digest of
// that content. The decision form carries the gate token and the digest
// of what the page showed; the engine refuses a decision whose token or
// digest is not the current round's, so an approval is never applied to
// work its author did not see.

type gateCard struct {
	Key         string
	V           string
	RunID       string
	Flow        string
	StepID      string
	Kind        string
	Token       string
	Digest      string
	Round       int
	MaxRounds   int
	RevisesLeft int
	OnApprove   string
	OnRevise    string
	OnKill      string
	CanRevise   bool
	NoRevise    string
	Review      []reviewed
	// From is the page the form returns to: gates or run.
	From string
}

type reviewed struct {
	StepID    string
	Status    string
	Task      block
	Output    block
	OutputCut bool
	Work      *workView
	Items     []itemPatch
}

type workView struct {
	Stat       string
	PatchBytes int
	Patch      block
	URL        string
}

type itemPatch struct {
	Index int
	Bytes int
	Patch block
	URL   string
}

func patchURL(runID, stepID string, item, attempt int) string {
	q := url.Values{"step": {stepID}}
	if item >= 0 {
		q.Set("item", strconv.Itoa(item))
	}
	if attempt > 0 {
		q.Set("attempt", strconv.Itoa(attempt))
	}
	return runURL(runID) + "/patch?" + q.Encode()
}

// gateCards builds the cards of one run's waiting gates.
func (s *Server) gateCards(ctx context.Context, runID, from string) ([]gateCard, error) {
	views, err := s.eng.GateViews(ctx, runID)
	if err != nil {
		return nil, err
	}
	cards := make([]gateCard, 0, len(views))
	for _, gv := range views {
		cards = append(cards, s.gateCard(ctx, gv, from))
	}
	return cards, nil
}

func (s *Server) gateCard(ctx context.Context, gv engine.GateView, from string) gateCard {
	c := gateCard{Key: gv.RunID + "/" + gv.StepID, RunID: gv.RunID, Flow: gv.Flow, StepID: gv.StepID, Kind: string(gv.Kind),
		Token: gv.GateToken, Digest: gv.Digest, Round: gv.Round, MaxRounds: gv.MaxRounds, RevisesLeft: gv.RevisesLeft,
		OnApprove: gv.OnApprove, OnRevise: gv.OnRevise, OnKill: gv.OnKill, From: from}
	switch {
	case gv.Kind == engine.WaitInterrupted:
		c.NoRevise = "an interrupted attempt is approved (run again) or killed"
	case gv.OnRevise == "":
		c.NoRevise = "this gate has no on_revise route"
	case gv.RevisesLeft == 0:
		c.NoRevise = fmt.Sprintf("no revise left (round %d of at most %d): a revise would fail the run", gv.Round, gv.MaxRounds)
	default:
		c.CanRevise = true
	}
	for _, rs := range gv.UnderReview {
		rv := reviewed{StepID: rs.StepID, Status: string(rs.Status), Task: textBlock(rs.Task, maxShownJSON), OutputCut: rs.OutputTruncated}
		if rs.OutputTruncated {
			// The view holds the output's JSON text, cut.
			if text, ok := rs.Output.Data.(string); ok {
				rv.Output = textBlock(text, maxShownJSON)
			}
		} else {
			rv.Output = jsonBlock(rs.Output, maxShownJSON)
		}
		if wc := rs.WorkChanges; wc != nil {
			wv := &workView{Stat: wc.Stat, PatchBytes: wc.PatchBytes, URL: patchURL(gv.RunID, rs.StepID, -1, 0)}
			if wc.PatchBytes > 0 {
				if p, err := s.eng.Patch(ctx, gv.RunID, rs.StepID, -1, 0); err == nil {
					wv.Patch = textBlock(string(p), maxShownPatch)
				} else {
					wv.Patch = textBlock("(the patch could not be read: "+err.Error()+")", maxShownText)
				}
			}
			rv.Work = wv
		}
		for _, it := range rs.Changes {
			ip := itemPatch{Index: it.ItemIndex, Bytes: it.Bytes, URL: patchURL(gv.RunID, rs.StepID, it.ItemIndex, 0)}
			if it.Bytes > 0 {
				if p, err := s.eng.Patch(ctx, gv.RunID, rs.StepID, it.ItemIndex, 0); err == nil {
					ip.Patch = textBlock(string(p), maxShownPatch)
				}
			}
			rv.Items = append(rv.Items, ip)
		}
		c.Review = append(c.Review, rv)
	}
	c.V = version(c)
	return c
}

type gatesView struct {
	Cards []gateCard
	V     string
	// Errors are the runs whose gates could not be read.
	Errors []string
}

func (s *Server) gatesView(ctx context.Context) (gatesView, error) {
	gates, err := s.eng.ListGates(ctx, "")
	if err != nil {
		return gatesView{}, err
	}
	var v gatesView
	seen := map[string]bool{}
	for _, g := range gates {
		if seen[g.RunID] {
			continue
		}
		seen[g.RunID] = true
		cards, err := s.gateCards(ctx, g.RunID, "gates")
		if err != nil {
			v.Errors = append(v.Errors, fmt.Sprintf("run %s: %v", g.RunID, err))
			continue
		}
		v.Cards = append(v.Cards, cards...)
	}
	v.V = version(v.Cards)
	return v, nil
}

func (s *Server) gatesPage(w http.ResponseWriter, r *http.Request) {
	s.showGates(w, r, http.StatusOK, nil)
}

func (s *Server) showGates(w http.ResponseWriter, r *http.Request, code int, fl *flash) {
	ctx := r.Context()
	v, err := s.gatesView(ctx)
	if err != nil {
		s.errorPage(w, http.StatusInternalServerError, "Gates", "The gates could not be listed: "+err.Error())
		return
	}
	fp := ""
	if runs, err := s.eng.ListRuns(ctx); err == nil {
		fp = listFingerprint(runs)
	}
	s.render(w, code, "gates", page{Title: "Gates", Nav: "gates", Live: "/live?list=1", Cursor: fp, Flash: fl, Content: v})
}

// patch serves a recorded patch as text.
func (s *Server) patch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	item, attempt := -1, 0
	if v := q.Get("item"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			s.errorPage(w, http.StatusBadRequest, "Patch", "item must be a fanout item's index")
			return
		}
		item = n
	}
	if v := q.Get("attempt"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			s.errorPage(w, http.StatusBadRequest, "Patch", "attempt must be an attempt's number")
			return
		}
		attempt = n
	}
	p, err := s.eng.Patch(r.Context(), r.PathValue("run"), q.Get("step"), item, attempt)
	if err != nil {
		s.engineError(w, "Patch", err)
		return
	}
	if p == nil {
		s.errorPage(w, http.StatusNotFound, "Patch", "No changes are recorded for that step.")
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write(p)
}
