package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/internal/eventtext"
	"github.com/stratum-go/stratum/ir"
)

// The run page (docs/serve.md, "A run"): the run's status and the
// verdict on its hash chain, its spend against its budget, its output or
// failure, the gates waiting in it, the step graph with each step's
// status, every step with its rendered task, attempts, outputs and
// failures, and the event log. Everything comes from the engine's audit
// of the run, that is from what its log records.

// defaultEvents is how many of the latest events the run page lists; the
// others are listed by the run's events pages.
const defaultEvents = 200

// openSteps is the most steps a run may have for all of them to be shown
// open; beyond it only the steps that need attention are, and the others
// carry only their summary: their details are the step's page, fetched
// when the step is opened (with a click, or from the graph).
const openSteps = 30

type chainView struct {
	Checked bool
	OK      bool
	Events  int64
	Head    string
	Problem string
	Tail    string
}

type attemptView struct {
	N          int
	At         string
	Stage      string
	Accepted   bool
	Kind       string
	Reason     string
	Result     block
	Usage      string
	Duration   string
	Model      string
	Stderr     block
	Stat       string
	PatchBytes int
	PatchURL   string
	// SameAsOutput: the result is the step's output, shown above.
	SameAsOutput bool
}

type itemRow struct {
	Index    int
	Status   string
	Attempts int
	Task     block
	Output   block
	Failure  string
	Patch    int
}

type stepCard struct {
	Key, V      string
	ID          string
	Kind        string
	Status      string
	Task        block
	Output      block
	Failure     string
	Routed      string
	Skip        string
	Decision    string
	Revision    string
	Started     string
	Interrupted string
	Iterations  int
	Epoch       int
	Spent       string
	// Meta is the summary's line: attempts, spend, resets, iterations
	// (made here, not by the template: a long run's page has a thousand).
	Meta     string
	Attempts []attemptView
	Items    []itemRow
	Sub      []stepCard
	// Open shows the step's details at first.
	Open bool
	// Src, on a closed step of a long run's page, is the address of the
	// step's page: the card holds only its summary and a link there.
	Src string
	// Verdicts are the judge's verdicts on the step's judged ensures.
	Verdicts []verdict
}

// verdict is one judged ensure as the judge decided it.
type verdict struct {
	Statement string
	Holds     bool
	Reason    string
	Model     string
}

type eventRow struct {
	Key, V string
	Seq    int64
	At     string
	Type   string
	Step   string
	Text   string
	Detail block
}

type runView struct {
	RunID     string
	Flow      string
	Status    string
	Created   string
	Updated   string
	Age       string
	Workspace string
	Rounds    int
	Chain     chainView
	Ledger    []ledgerLine
	Output    block
	Failure   string
	Error     string
	HeadV     string
	Gates     []gateCard
	GatesV    string
	Graph     *graphView
	GraphV    string
	Steps     []stepCard
	StepsV    string
	Events    []eventRow
	EventsV   string
	// EventsHidden is how many older events are not listed.
	EventsHidden int
	AllEvents    string
}

func (s *Server) runPage(w http.ResponseWriter, r *http.Request) {
	s.showRun(w, r, r.PathValue("run"), http.StatusOK, nil)
}

func (s *Server) showRun(w http.ResponseWriter, r *http.Request, runID string, code int, fl *flash) {
	v, cursor, err := s.runView(r.Context(), runID)
	if errors.Is(err, engine.ErrRunNotFound) {
		s.errorPage(w, http.StatusNotFound, "Run not found", "There is no run "+runID+" in this server's store.")
		return
	}
	if err != nil {
		s.errorPage(w, http.StatusInternalServerError, "Run", err.Error())
		return
	}
	live := "/live?run=" + runID
	s.render(w, code, "run", page{Title: "Run " + v.Flow, Nav: "runs", Live: live, Cursor: strconv.FormatInt(cursor, 10), Flash: fl, Content: v})
}

// runView reads a run. A run whose log does not verify is still shown,
// with what could be read and where the chain breaks.
func (s *Server) runView(ctx context.Context, runID string) (*runView, int64, error) {
	v := &runView{RunID: runID, AllEvents: eventsURL(runID, 0)}
	rd, err := s.readRun(ctx, runID)
	if errors.Is(err, engine.ErrRunNotFound) {
		return nil, 0, err
	}
	if err != nil {
		v.Chain = s.chains.check(ctx, s.opts.Chain, runID, -1, time.Time{})
		v.Status, v.Error = "unreadable", err.Error()
		v.HeadV = version(v)
		return v, 0, nil
	}
	a := rd.report
	t := now()
	v.Flow, v.Status, v.Workspace, v.Rounds = a.Flow, string(a.Status), a.WorkspaceRoot, a.Rounds
	v.Created, v.Updated, v.Age = stamp(a.CreatedAt), stamp(a.UpdatedAt), ago(a.CreatedAt, t)
	v.Ledger = ledgerLines(a.Ledger)
	v.Output = jsonBlock(a.Output, maxShownJSON)
	if a.Failure != nil {
		v.Failure = a.Failure.Reason
	}
	if a.Status == engine.StatusRunning && waitsOnPersonIn(a.Steps) {
		if cards, err := s.gateCards(ctx, runID, "run"); err == nil {
			v.Gates = cards
		}
	}
	v.GatesV = version(v.Gates)
	plan, err := s.eng.RunPlan(ctx, runID)
	if err != nil {
		return nil, 0, err
	}
	entry := plan.Flow(a.Flow)
	if entry == nil {
		entry = plan.EntryFlow()
	}
	v.Graph = drawGraph(plan, entry, a.Steps, runID)
	v.GraphV = version(v.Graph.Status)
	for _, st := range entry.Steps {
		c := s.stepCard(plan, st, a.Steps[st.ID], runID, st.ID, len(entry.Steps) <= openSteps)
		if vs := rd.verdicts[st.ID]; len(vs) > 0 {
			c.Verdicts = vs
			c.V = version(c)
		}
		if !c.Open {
			c.Src = stepURL(runID, st.ID)
		}
		v.Steps = append(v.Steps, c)
	}
	v.StepsV = version(v.Steps)
	v.EventsHidden = rd.hidden
	cursor := rd.last
	// The live stream starts from the head, past the internal events
	// after the last one shown.
	if rep, err := s.eng.Poll(ctx, runID, cursor); err == nil {
		cursor = rep.NextCursor
	}
	v.Chain = s.chains.check(ctx, s.opts.Chain, runID, cursor, a.UpdatedAt)
	v.HeadV = version([]any{v.Status, v.Chain, v.Ledger, v.Output, v.Failure, v.Updated, v.Rounds})
	v.Events = eventRows(rd.latest)
	v.EventsV = version([]any{v.EventsHidden, len(v.Events), cursor})
	return v, cursor, nil
}

// runRead is what the run page takes from one pass over a run's record.
type runRead struct {
	// report is the audit with every step and no events.
	report *engine.AuditReport
	// latest are the last defaultEvents events, oldest first; hidden is
	// how many came before them and last the seq of the last one.
	latest []engine.Event
	hidden int
	last   int64
	// verdicts are the judge's verdicts by step, from every event.
	verdicts map[string][]verdict
}

// readRun reads a run's record with the engine's streamed audit
// (docs/engine.md, "Cancel, audit, poll"): the events go by one at a time
// and only the latest defaultEvents are kept (with the judge's verdicts
// of all of them), so a long run's page holds its steps, not its log.
func (s *Server) readRun(ctx context.Context, runID string) (*runRead, error) {
	rd := &runRead{verdicts: map[string][]verdict{}}
	ring := make([]engine.Event, 0, defaultEvents)
	seen := 0
	steps := map[string]*engine.StepView{}
	rep, err := s.eng.AuditStream(ctx, runID, engine.AuditOptions{}, engine.AuditVisitor{
		Event: func(ev engine.Event) error {
			if len(ring) < defaultEvents {
				ring = append(ring, ev)
			} else {
				ring[seen%defaultEvents] = ev
			}
			seen++
			rd.last = ev.Seq
			var d engine.JudgedDetail
			if ev.Type == engine.EventJudged && ev.DecodeDetail(&d) == nil {
				rd.verdicts[ev.StepID] = append(rd.verdicts[ev.StepID], verdict{Statement: d.Statement, Holds: d.Holds, Reason: d.Reason, Model: d.Model})
			}
			return nil
		},
		Step: func(id string, sv *engine.StepView) error { steps[id] = sv; return nil },
	})
	if err != nil {
		return nil, err
	}
	if seen > defaultEvents {
		// The ring's oldest entry is the one the next event would replace.
		k := seen % defaultEvents
		ring = append(ring[k:len(ring):len(ring)], ring[:k]...)
	}
	rep.Steps = steps
	rd.report, rd.latest, rd.hidden = rep, ring, max(0, seen-defaultEvents)
	return rd, nil
}

// eventRows are events as the run page and the events pages list them.
func eventRows(evs []engine.Event) []eventRow {
	rows := make([]eventRow, 0, len(evs))
	for _, ev := range evs {
		row := eventRow{Key: strconv.FormatInt(ev.Seq, 10), Seq: ev.Seq, At: stamp(ev.At), Type: string(ev.Type), Step: ev.StepID,
			Text: eventtext.Describe(ev), Detail: textBlock(string(ev.Detail), maxShownText)}
		row.V = version(row)
		rows = append(rows, row)
	}
	return rows
}

// stepCard is one step as the run page shows it; scoped is its id as the
// engine names it (runStep/child inside a subflow).
func (s *Server) stepCard(plan *ir.Plan, st *ir.Step, sv *engine.StepView, runID, scoped string, open bool) stepCard {
	c := stepCard{Key: scoped, ID: st.ID, Kind: st.Kind.String(), Status: "pending", Open: open}
	if sv == nil {
		c.Meta = summaryMeta(&c)
		c.V = version(c)
		return c
	}
	c.Status, c.Iterations, c.Epoch = string(sv.Status), sv.Iterations, sv.Epoch
	switch sv.Status {
	case engine.StepFailed, engine.StepWaitingGate, engine.StepInterrupted, engine.StepReady, engine.StepRunning:
		c.Open = true
	}
	task := sv.Task
	for i := len(sv.Attempts) - 1; i >= 0 && task == ""; i-- {
		task = sv.Attempts[i].Task
	}
	c.Task = textBlock(task, maxShownJSON)
	c.Output = jsonBlock(sv.Output, maxShownJSON)
	if sv.Failure != nil {
		c.Failure = sv.Failure.Reason
	}
	if sv.Routed != nil {
		c.Routed = sv.Routed.Reason
	}
	if sv.Skip != nil {
		c.Skip = sv.Skip.Reason
	}
	c.Decision = string(sv.Decision)
	if rv := sv.Revision; rv != nil {
		c.Revision = fmt.Sprintf("sent back by gate %s (round %d)", rv.Gate, rv.Round)
		if rv.ResolvedBy != "" {
			c.Revision += " by " + rv.ResolvedBy
		}
		if rv.Note != "" {
			c.Revision += ": " + rv.Note
		}
	}
	if sv.Started != nil {
		c.Started = "started " + stamp(sv.Started.At) + " by " + sv.Started.By
	}
	if sv.Interrupted != nil {
		c.Interrupted = "an earlier attempt was interrupted " + stamp(sv.Interrupted.At) + " (" + sv.Interrupted.By + ")"
	}
	c.Spent = usageText(&sv.Spent)
	for _, at := range sv.Attempts {
		av := attempt(at, runID, scoped)
		av.SameAsOutput = av.Accepted && av.Result == c.Output
		if av.SameAsOutput {
			av.Result = block{}
		}
		c.Attempts = append(c.Attempts, av)
	}
	if fo := sv.Fanout; fo != nil {
		for _, it := range fo.Items {
			row := itemRow{Index: it.Index, Status: string(it.Status), Attempts: len(it.Attempts), Task: textBlock(it.Task, maxShownText),
				Output: jsonBlock(it.Output, maxShownText), Patch: it.PatchBytes}
			if it.Failure != nil {
				row.Failure = it.Failure.Reason
			}
			c.Items = append(c.Items, row)
		}
	}
	if sub := sv.Sub; sub != nil && st.Kind == ir.KindRun {
		if f := plan.Flow(st.Run); f != nil {
			for _, cs := range f.Steps {
				c.Sub = append(c.Sub, s.stepCard(plan, cs, sub.Steps[cs.ID], runID, scoped+"/"+cs.ID, open))
			}
		}
	}
	c.Meta = summaryMeta(&c)
	c.V = version(c)
	return c
}

// summaryMeta is a step card's summary line.
func summaryMeta(c *stepCard) string {
	plural := func(n int, one string) string {
		if n == 1 {
			return "1 " + one
		}
		return strconv.Itoa(n) + " " + one + "s"
	}
	m := plural(len(c.Attempts), "attempt")
	if c.Spent != "" {
		m += " · spent " + c.Spent
	}
	if c.Epoch > 0 {
		m += " · reset " + plural(c.Epoch, "time") + " by revise"
	}
	if c.Iterations > 0 {
		m += " · " + plural(c.Iterations, "iteration")
	}
	return m
}

func attempt(at engine.Attempt, runID, stepID string) attemptView {
	v := attemptView{N: at.Attempt, At: stamp(at.At), Accepted: at.Failure == nil, Kind: at.FailureKind,
		Result: jsonBlock(at.Result, maxShownJSON), Usage: usageText(at.Usage), Model: at.Model, Stderr: textBlock(at.Stderr, maxShownText)}
	if at.Stage != nil {
		v.Stage = strconv.Itoa(*at.Stage)
	}
	if at.Failure != nil {
		v.Reason = at.Failure.Reason
	}
	if at.DurationMs != nil {
		v.Duration = fmt.Sprintf("%.0f ms", *at.DurationMs)
	}
	if at.Effort != "" {
		v.Model += " (" + at.Effort + ")"
	}
	if c := at.Changes; c != nil {
		v.Stat, v.PatchBytes = c.Stat, c.PatchBytes
		if c.PatchBytes > 0 {
			v.PatchURL = patchURL(runID, stepID, -1, at.Attempt)
		}
	}
	return v
}

// engineError shows an engine refusal as a page.
func (s *Server) engineError(w http.ResponseWriter, title string, err error) {
	if errors.Is(err, engine.ErrRunNotFound) {
		s.errorPage(w, http.StatusNotFound, title, "There is no such run in this server's store.")
		return
	}
	s.errorPage(w, http.StatusInternalServerError, title, err.Error())
}

// waitsOnPersonIn reports whether a step (of the run or of a subflow)
// waits for a person: only then is there a gate view to ask for, which
// reads the run's whole log again.
func waitsOnPersonIn(steps map[string]*engine.StepView) bool {
	for _, sv := range steps {
		if sv.Status == engine.StepWaitingGate || sv.Status == engine.StepInterrupted {
			return true
		}
		if sv.Sub != nil && waitsOnPersonIn(sv.Sub.Steps) {
			return true
		}
	}
	return false
}
