package driver

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// RunTimeLimitError is why a drive stopped at Options.RunTimeout. The run
// is intact: a later Resume continues it with a fresh limit.
type RunTimeLimitError struct {
	RunID string
	Limit time.Duration
}

func (e *RunTimeLimitError) Error() string {
	return fmt.Sprintf("the drive reached its time limit of %v; the agents still at work were stopped", e.Limit)
}

// stopAtLimit ends a drive at its time limit: the agents at work are being
// stopped (their context ended with the limit), so it waits for each of
// their attempts and records it as failed, naming the limit, with what the
// agent spent; attempts that never started are left ready. Then the drive
// halts. first, when set, is an attempt already received.
func (r *run) stopAtLimit(ctx context.Context, limit *RunTimeLimitError, first *attemptDone) error {
	bg := context.WithoutCancel(ctx)
	reason := fmt.Sprintf("stopped at the run's time limit of %v; the agent's process group was stopped", limit.Limit)
	for first != nil || len(r.inflight) > 0 {
		var done attemptDone
		if first != nil {
			done, first = *first, nil
		} else {
			done = <-r.attempts
			delete(r.inflight, done.entry.DispatchToken)
		}
		if !done.started {
			continue
		}
		var cut *RunTimeLimitError
		switch {
		case done.err == nil:
			// It finished first: reported as it is.
		case !errors.As(done.err, &cut):
			continue // the agent could not run: not an attempt
		default:
			done.err, done.patch = nil, nil
			done.res.Output, done.res.Failure = nil, reason
		}
		if err := r.settle(bg, done); err != nil {
			return err
		}
	}
	return &HaltError{RunID: r.id, Err: limit}
}

// limitOf is the run time limit that ended ctx, or nil.
func limitOf(ctx context.Context) *RunTimeLimitError {
	var limit *RunTimeLimitError
	if ctx.Err() != nil && errors.As(context.Cause(ctx), &limit) {
		return limit
	}
	return nil
}
