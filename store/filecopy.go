package store

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

var _ Copier = (*FileStore)(nil)

// ExportRun implements Copier. It holds the run's lock shared, as Verify
// does, checks the whole run as Verify does, and reads the acknowledged
// log and the data its repairs kept aside.
func (s *FileStore) ExportRun(ctx context.Context, runID string) (*RunCopy, error) {
	if err := ValidateRunID(runID); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lk, err := s.lockShared(ctx, runID)
	if err != nil {
		return nil, err
	}
	defer lk.release()
	v, err := s.inspect(runID, false, true, s.files(runID))
	if err != nil {
		return nil, err
	}
	defer v.close()
	rep := &VerifyReport{}
	if err := s.walkLog(ctx, runID, v, "", rep); err != nil {
		return nil, err
	}
	c := &RunCopy{RunID: runID, State: slices.Clone(v.env.State), Summary: slices.Clone(v.env.Summary)}
	if v.log != nil && v.env.LogSize > 0 {
		data := make([]byte, v.env.LogSize)
		if _, err := v.log.ReadAt(data, 0); err != nil {
			return nil, fmt.Errorf("run %s: export: read the log: %w", runID, err)
		}
		for len(data) > 0 {
			i := bytes.IndexByte(data, '\n')
			c.Lines = append(c.Lines, data[:i:i])
			data = data[i+1:]
		}
	}
	for _, rp := range rep.Repairs {
		for _, k := range rp.Kept {
			data, err := os.ReadFile(s.runPath(runID, k.Name))
			if err != nil {
				return nil, fmt.Errorf("run %s: export: %w", runID, err)
			}
			c.Kept = append(c.Kept, KeptData{Name: k.Name, Data: data})
		}
	}
	return c, nil
}

// ImportRun implements Copier: the run is placed as Create places one
// (staging directory, fsyncs, rename, head record), with the copy's log
// written as it is.
func (s *FileStore) ImportRun(ctx context.Context, c *RunCopy) (Head, error) {
	head, err := CheckCopy(c)
	if err != nil {
		return Head{}, err
	}
	if err := ctx.Err(); err != nil {
		return Head{}, err
	}
	for _, k := range c.Kept {
		if k.Name != filepath.Base(k.Name) || !strings.HasPrefix(k.Name, "tail-after-") {
			return Head{}, fmt.Errorf("run %s: %w: kept data %q is not named as a repair names it", c.RunID, ErrInvalidInput, k.Name)
		}
	}
	var summary []byte
	if c.Summary != nil {
		summary, _ = normalizeSummary(c.RunID, c.Summary) // checked by CheckCopy
	}
	var lines []byte
	at := make([]int64, 0, len(c.Lines))
	for _, l := range c.Lines {
		at = append(at, int64(len(lines)))
		lines = append(append(lines, l...), '\n')
	}
	env := envelope{RunID: c.RunID, Seq: head.Seq, Head: head.Hash, LogSize: int64(len(lines)), Rev: 1,
		Summary: summary, SavedAt: time.Now().UTC(), State: c.State}
	if err := s.place(ctx, c.RunID, env, lines, at, c.Kept); err != nil {
		return Head{}, err
	}
	return head, nil
}
