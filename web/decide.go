package web

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/stratum-go/stratum/engine"
)

// Limits of a decision form.
const (
	maxFormBytes = 64 << 10
	maxNoteBytes = 8 << 10
	maxNameRunes = 100
)

// decide records a gate decision made on a page (docs/serve.md, "Deciding
// a gate"). The form carries what the page showed: the gate token and the
// digest of the content under review; the engine takes the decision only
// when both are the current round's. The answer is the page the form was
// on, rendered anew: with the outcome at the top, and after a refusal the
// content that is under review now.
func (s *Server) decide(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		s.errorPage(w, http.StatusBadRequest, "Decision", "The decision form could not be read.")
		return
	}
	f := r.PostForm
	runID, stepID := f.Get("run"), f.Get("step")
	from := f.Get("from")
	back := func(code int, fl *flash) {
		if from == "run" && runID != "" {
			s.showRun(w, r, runID, code, fl)
			return
		}
		s.showGates(w, r, code, fl)
	}
	bad := func(msg string) { back(http.StatusBadRequest, &flash{Message: "Not decided: " + msg}) }
	decision := engine.Decision(f.Get("decision"))
	switch decision {
	case engine.DecisionApprove, engine.DecisionRevise, engine.DecisionKill:
	default:
		bad("choose approve, revise or kill.")
		return
	}
	by := strings.TrimSpace(f.Get("by"))
	note := strings.TrimSpace(f.Get("note"))
	switch {
	case runID == "" || stepID == "":
		bad("the form does not say which gate it is about.")
		return
	case by == "":
		bad("say who you are (your name is recorded with the decision).")
		return
	case utf8.RuneCountInString(by) > maxNameRunes || strings.ContainsFunc(by, unicode.IsControl):
		bad(fmt.Sprintf("a name is one line of at most %d characters.", maxNameRunes))
		return
	case len(note) > maxNoteBytes:
		bad(fmt.Sprintf("the note is longer than %d bytes.", maxNoteBytes))
		return
	case !utf8.ValidString(note) || !utf8.ValidString(by):
		bad("the form is not valid UTF-8.")
		return
	case f.Get("token") == "":
		bad("the form carries no gate token: reload the page.")
		return
	case f.Get("kind") != string(engine.WaitInterrupted) && f.Get("digest") == "":
		bad("the form does not say what content it was decided on (no digest): reload the page.")
		return
	}
	ctx := r.Context()
	if s.opts.AllowDecision != nil {
		if err := s.opts.AllowDecision(ctx, runID); err != nil {
			back(http.StatusForbidden, &flash{Message: err.Error()})
			return
		}
	}
	d, err := s.eng.DecideGate(ctx, engine.GateRequest{RunID: runID, StepID: stepID, Decision: decision,
		GateToken: f.Get("token"), Digest: f.Get("digest"), Rationale: note, ResolvedBy: by})
	if err != nil {
		code, fl := refusal(err, stepID)
		back(code, fl)
		return
	}
	msg := fmt.Sprintf("Decided %s on %s of run %s, as %s.", decision, stepID, runID, by)
	if d.Target != "" {
		msg += " The run continues at " + d.Target + "."
	}
	switch st := d.Response.Status; st {
	case engine.StatusReady, engine.StatusRunning:
		msg += " The run goes on."
	default:
		msg += " The run is " + string(st) + "."
	}
	back(http.StatusOK, &flash{OK: true, Message: msg})
}

// refusal says why the engine refused a decision, in the words a person
// needs to act.
func refusal(err error, stepID string) (int, *flash) {
	var ee *engine.Error
	detail := err.Error()
	switch {
	case errors.Is(err, engine.ErrStaleToken):
		return http.StatusConflict, &flash{Message: "Not decided: what this page showed is no longer what is under review at " + stepID +
			" (a new round began, or someone decided it). The content under review now is shown below: read it and decide again.", Detail: detail}
	case errors.Is(err, engine.ErrRunTerminal), errors.Is(err, engine.ErrRunCancelled):
		msg := "Not decided: the run has ended."
		if errors.As(err, &ee) && ee.State != nil {
			msg = "Not decided: the run is already " + string(ee.State.Status) + "."
		}
		return http.StatusConflict, &flash{Message: msg, Detail: detail}
	case errors.Is(err, engine.ErrNotAwaiting):
		return http.StatusConflict, &flash{Message: "Not decided: " + stepID + " is not waiting for a decision.", Detail: detail}
	case errors.Is(err, engine.ErrRunNotFound):
		return http.StatusNotFound, &flash{Message: "Not decided: there is no such run.", Detail: detail}
	case errors.Is(err, engine.ErrRunLocked):
		return http.StatusServiceUnavailable, &flash{Message: "Not decided: the run is busy; try again.", Detail: detail}
	}
	return http.StatusConflict, &flash{Message: "Not decided: " + detail}
}
