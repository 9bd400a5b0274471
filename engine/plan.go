package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/stratum-go/stratum/ir"
	"github.com/stratum-go/stratum/store"
)

// PlanRequest starts a run.
type PlanRequest struct {
	// Spec is the v1 spec as YAML or JSON text.
	Spec []byte
	// Input is the entry flow's input, a JSON object; nil is the empty
	// object. Its key order and number text are kept as sent.
	Input json.RawMessage
	// WorkspaceRoot is the jail of file predicates and the working
	// directory of engine-run commands; empty means the policy's default.
	WorkspaceRoot string
	// ClientRoots are the roots the MCP client declared for its session
	// (roots/list), which the policy may accept workspace roots within.
	ClientRoots []string
	// Background plans a run that a server drives (stratum_flow_run_bg;
	// lease.go): a spec with a consumer fanout is refused
	// (ErrBackgroundUnsupported), the agents of its do steps are asked of
	// the policy, and only the holder of the run's lease drives it.
	Background bool
}

// Plan validates the spec and the entry input, creates and persists the
// run and performs its first advance. Nothing is persisted when the spec
// or the input is invalid (ErrInvalidSpec, ErrInvalidInput). The response
// carries the run's revisionDigest.
func (e *Engine) Plan(ctx context.Context, req PlanRequest) (*Response, error) {
	c, err := e.compileSource(req.Spec)
	if err != nil {
		return nil, err
	}
	check := e.checkPolicy
	if req.Background {
		check = e.checkBackground // the same, and the agents of its do steps
	}
	if err := check(c.plan); err != nil {
		return nil, err
	}
	flow := c.plan.EntryFlow()
	raw := req.Input
	if len(raw) == 0 {
		raw = json.RawMessage("{}") // no input: an empty object
	}
	input, err := toModel(raw)
	if err != nil {
		return nil, &Error{Kind: ErrInvalidInput, Message: "entry input validation failed: input is not a JSON value: " + err.Error(),
			Details: []Detail{{Code: "INPUT_CONTRACT_INVALID", Path: "input", Message: err.Error()}}}
	}
	if errs := flow.Input.Validate(input, "input"); len(errs) > 0 {
		ds := make([]Detail, len(errs))
		msgs := make([]string, len(errs))
		for i, ve := range errs {
			ds[i] = Detail{Code: "INPUT_CONTRACT_INVALID", Path: ve.Path, Message: ve.Message}
			msgs[i] = ve.Path + ": " + ve.Message
		}
		return nil, &Error{Kind: ErrInvalidInput, Message: "entry input validation failed: " + strings.Join(msgs, "; "), Details: ds}
	}
	ws, anchor, err := e.workspaceRoot(req.WorkspaceRoot, req.ClientRoots)
	if err == nil && !(utf8.ValidString(ws) && utf8.ValidString(anchor)) {
		err = errors.New("the path is not valid UTF-8, which the run record cannot store")
	}
	if err != nil {
		return nil, &Error{Kind: ErrInvalidInput, Message: "workspace root refused: " + err.Error(), Err: err,
			Details: []Detail{{Code: "INPUT_CONTRACT_INVALID", Path: "workspaceRoot", Message: err.Error()}}}
	}
	now := e.now().UTC()
	st := &runState{
		Format: stateFormat, ID: e.newID(), FlowName: flow.Name, RevisionDigest: c.digest, WorkspaceRoot: ws, WorkspaceAnchor: anchor,
		CreatedAt: now, UpdatedAt: now, Status: StatusRunning, Steps: map[string]*stepState{},
		Input: Some(input), Spec: c.specJSON, SpecSeq: 1,
	}
	if req.Background {
		st.Background = &backgroundState{Since: now}
	}
	if err := store.ValidateRunID(st.ID); err != nil {
		return nil, fmt.Errorf("engine id source produced an unusable run id: %w", err)
	}
	t := newTxn(ctx, e, st, c)
	t.fullSweep = true // a new run: every step is looked at
	t.now = now
	t.emit(evSpec, "", map[string]any{"json": string(c.specJSON), "revisionDigest": c.digest})
	t.emit(EventPlanned, "", PlannedDetail{Flow: flow.Name, RevisionDigest: c.digest})
	if msg := e.missingDispatcher(flow); msg != "" {
		t.failRun(&Failure{Reason: msg, Cause: CauseDispatchUnavailable})
	} else {
		t.advance()
	}
	resp := t.response()
	resp.RevisionDigest = c.digest
	doc, err := t.encode()
	if err != nil {
		return nil, err
	}
	sum, err := t.summaryJSON()
	if err != nil {
		return nil, err
	}
	if _, err := e.store.Create(ctx, st.ID, store.Change{State: doc, Events: t.events, Summary: sum}); err != nil {
		if errors.Is(err, store.ErrRunExists) {
			return nil, fmt.Errorf("engine id source produced a run id already in use (%s): %w", st.ID, err)
		}
		return nil, mapStoreErr(st.ID, err)
	}
	e.remember(st.ID, doc, st)
	if t.engineWork {
		e.kickFanouts(st.ID)
	}
	if len(t.effects) > 0 {
		last, err := e.runEffects(ctx, st.ID, t.effects)
		if err != nil {
			return nil, err
		}
		resp = laterState(resp, last)
	}
	return resp, nil
}

// missingDispatcher names the engine-dispatched fanouts of a flow when no
// dispatcher is configured.
func (e *Engine) missingDispatcher(f *ir.Flow) string {
	if e.opts.Dispatcher != nil || e.opts.DeferDispatch {
		return ""
	}
	var ids []string
	for _, s := range f.Steps {
		if s.Kind == ir.KindFanout && s.Fanout.Dispatch != ir.DispatchConsumer {
			ids = append(ids, quote(s.ID))
		}
	}
	if len(ids) == 0 {
		return ""
	}
	return fmt.Sprintf("engine dispatch is not configured: fanout %s uses dispatch: engine, which needs an agent dispatcher (the `stratum run` driver); use dispatch: consumer to run the items yourself",
		strings.Join(ids, ", "))
}
