package engine

import (
	"context"
	"encoding/json"
	"fmt"
)

// Patch returns the changes recorded for a step (docs/engine.md,
// "Changes"): for a fanout item (item >= 0) the patch its worktree
// produced, for a do step the patch of one attempt (attempt 0: the last
// one that recorded changes). A step without recorded changes gives a nil
// patch and no error. Read-only; it reads the run's log.
func (e *Engine) Patch(ctx context.Context, runID, stepID string, item, attempt int) ([]byte, error) {
	if _, _, _, err := e.load(ctx, runID); err != nil {
		return nil, err
	}
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
