package engine

import (
	"context"
	"encoding/json"
	"fmt"
)

// Patch returns the changes recorded for a step (docs/engine.md,
// "Changes"): for a fanout item (item >= 0) the patch its worktree
// produced, for a do step the patch of one attempt (attempt 0: the last
// attempt). A step without recorded changes gives a nil patch and no
// error. Read-only: the patch is read by its record's seq; only a merged
// item's patch, or one recorded before attempts kept their seqs, is
// looked for in the log.
func (e *Engine) Patch(ctx context.Context, runID, stepID string, item, attempt int) (_ []byte, err error) {
	defer recoverLoad(&err)
	st, c, _, err := e.load(ctx, runID)
	if err != nil {
		return nil, err
	}
	t := newTxn(ctx, e, st, c)
	loc, ok := t.locate(stepID)
	if !ok {
		return nil, newErr(ErrInvalidStep, runID, "run %s has no step %s", runID, stepID)
	}
	ss := loc.sc.peek(loc.step)
	if ss == nil {
		return nil, nil
	}
	if item >= 0 {
		if ss.Fanout != nil && item < len(ss.Fanout.Items) && ss.Fanout.Items[item].PatchSeq != 0 {
			return e.readPatch(ctx, runID, ss.Fanout.Items[item].PatchSeq)
		}
		return e.scanPatch(ctx, runID, stepID, item, attempt)
	}
	if attempt == 0 {
		attempt = len(ss.Attempts)
	}
	if seq, ok := ss.PatchSeqs[attempt]; ok {
		raw, err := e.blob(ctx, runID, seq)
		if err != nil {
			return nil, err
		}
		var b attemptPatch
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, fmt.Errorf("run %s: %w: patch event %d: %v", runID, ErrCorrupt, seq, err)
		}
		return b.Patch, nil
	}
	if ss.PatchSeqs != nil || attempt < 1 || attempt > len(ss.Attempts) {
		return nil, nil
	}
	if ch := ss.Attempts[attempt-1].Changes; ch == nil || ch.PatchBytes == 0 || ch.PatchOmitted {
		return nil, nil
	}
	return e.scanPatch(ctx, runID, stepID, item, attempt)
}

// scanPatch looks for a patch in the run's log.
func (e *Engine) scanPatch(ctx context.Context, runID, stepID string, item, attempt int) ([]byte, error) {
	evs, err := e.store.Events(ctx, runID, 0, 0)
	if err != nil {
		return nil, mapStoreErr(runID, err)
	}
	var found []byte
	for _, ev := range evs {
		if ev.Type != string(evPatch) && ev.Type != string(evAttemptPatch) {
			continue
		}
		var d struct {
			StepID string `json:"stepId"`
			Detail struct {
				JSON string `json:"json"`
			} `json:"detail"`
		}
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return nil, fmt.Errorf("run %s: %w: event %d: %v", runID, ErrCorrupt, ev.Seq, err)
		}
		if d.StepID != stepID {
			continue
		}
		switch {
		case item >= 0 && ev.Type == string(evPatch):
			var b patchBlob
			if json.Unmarshal([]byte(d.Detail.JSON), &b) == nil && b.ItemIndex == item {
				found = b.Patch
			}
		case item < 0 && ev.Type == string(evAttemptPatch):
			var b attemptPatch
			if json.Unmarshal([]byte(d.Detail.JSON), &b) == nil && (attempt == 0 || b.Attempt == attempt) {
				found = b.Patch
			}
		}
	}
	return found, nil
}
