package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/ir"
)

// A step's page (docs/serve.md, "A run"): one step of a run with all its
// details, rendered by the same template as the run page's steps. On a
// long run's page a closed step carries only its summary and a link here;
// the page's script fetches this page when the step is opened and puts
// the step's details in place, and without the script the link opens it.
// So a long run's page holds its steps' summaries, not their outputs.

type stepPageView struct {
	RunID     string
	RunURL    string
	Flow      string
	RunStatus string
	Card      stepCard
}

// stepURL is the address of a step's page; key is the step's id as the
// run page names it (runStep/child inside a subflow).
func stepURL(runID, key string) string {
	parts := strings.Split(key, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return runURL(runID) + "/steps/" + strings.Join(parts, "/")
}

func (s *Server) stepPage(w http.ResponseWriter, r *http.Request) {
	runID, key := r.PathValue("run"), r.PathValue("step")
	v, err := s.stepView(r.Context(), runID, key)
	switch {
	case errors.Is(err, engine.ErrRunNotFound):
		s.errorPage(w, http.StatusNotFound, "Step", "There is no run "+runID+" in this server's store.")
		return
	case errors.Is(err, engine.ErrInvalidStep), errors.Is(err, errNoSuchStep):
		s.errorPage(w, http.StatusNotFound, "Step", "The run "+runID+" has no step "+key+".")
		return
	case err != nil:
		s.engineError(w, "Step", err)
		return
	}
	s.render(w, http.StatusOK, "step", page{Title: "Step " + key + " of " + v.Flow, Nav: "runs", Content: v})
}

var errNoSuchStep = errors.New("web: no such step")

// stepView reads one step of a run: the engine's audit narrowed to its
// root step (the root step's view holds a subflow's steps), without the
// events unless the step has judged ensures, whose verdicts only the
// events record.
func (s *Server) stepView(ctx context.Context, runID, key string) (*stepPageView, error) {
	root, _, _ := strings.Cut(key, "/")
	if root == "" {
		return nil, errNoSuchStep
	}
	var sv *engine.StepView
	rep, err := s.eng.AuditStream(ctx, runID, engine.AuditOptions{Steps: []string{root}}, engine.AuditVisitor{
		Step: func(id string, v *engine.StepView) error {
			if id == root {
				sv = v
			}
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	plan, err := s.eng.RunPlan(ctx, runID)
	if err != nil {
		return nil, err
	}
	entry := plan.Flow(rep.Flow)
	if entry == nil {
		entry = plan.EntryFlow()
	}
	st := entry.Step(root)
	if st == nil {
		return nil, errNoSuchStep
	}
	// The subflow's steps open as they would on the run page.
	c := s.stepCard(plan, st, sv, runID, root, len(entry.Steps) <= openSteps)
	if judged(st) {
		vs, err := s.verdicts(ctx, runID, root)
		if err != nil {
			return nil, err
		}
		c.Verdicts = vs
	}
	c, ok := findCard(c, key)
	if !ok {
		return nil, errNoSuchStep
	}
	c.Open = true
	c.V = version(c)
	return &stepPageView{RunID: runID, RunURL: runURL(runID), Flow: rep.Flow, RunStatus: string(rep.Status), Card: c}, nil
}

// judged reports whether a step has a judged ensure.
func judged(st *ir.Step) bool {
	for _, en := range st.Ensure {
		if en.Kind == ir.EnsureJudged {
			return true
		}
	}
	return false
}

// verdicts are the judge's verdicts on one step, read from the run's
// events (as the run page reads them).
func (s *Server) verdicts(ctx context.Context, runID, stepID string) ([]verdict, error) {
	var vs []verdict
	_, err := s.eng.AuditStream(ctx, runID, engine.AuditOptions{}, engine.AuditVisitor{
		Event: func(ev engine.Event) error {
			var d engine.JudgedDetail
			if ev.Type == engine.EventJudged && ev.StepID == stepID && ev.DecodeDetail(&d) == nil {
				vs = append(vs, verdict{Statement: d.Statement, Holds: d.Holds, Reason: d.Reason, Model: d.Model})
			}
			return nil
		},
	})
	return vs, err
}

// findCard finds the card of key (a root step's, or one of its subflow's
// steps') in c.
func findCard(c stepCard, key string) (stepCard, bool) {
	if c.Key == key {
		return c, true
	}
	for _, sc := range c.Sub {
		if key == sc.Key || strings.HasPrefix(key, sc.Key+"/") {
			return findCard(sc, key)
		}
	}
	return stepCard{}, false
}
