package store

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/internal/atomicfile"
)

// The benchmarks measure one accepted step_done as the engine will issue
// it: an Update that replaces the state and appends one result event,
// both fsynced. To measure at a given history length the run is rebuilt
// (timer stopped) every 10 operations, so "seq=1000" really runs at seq
// 1000..1009.
//
//	go test ./store -run '^$' -bench . -benchtime 2000x

func benchState(size int) []byte {
	pad := max(0, size-len(`{"status":"running","pad":""}`))
	return fmt.Appendf(nil, `{"status":"running","pad":%q}`, strings.Repeat("s", pad))
}

// resultEvent is a typical step_done result event (about 300 bytes).
func resultEvent(seq int64) NewEvent {
	data, _ := json.Marshal(map[string]any{
		"stepId": "build", "attempt": 1, "seq": seq,
		"result": map[string]any{"summary": strings.Repeat("r", 180), "ok": true, "files": []string{"a.go", "b.go"}},
	})
	return NewEvent{Type: "result", At: time.Now(), Data: data}
}

func historyEvents(n int) []NewEvent {
	evs := make([]NewEvent, n)
	for i := range evs {
		evs[i] = resultEvent(int64(i + 1))
	}
	return evs
}

func BenchmarkUpdate(b *testing.B) {
	for _, tc := range []struct {
		seq, state int
	}{
		{10, 512}, {1000, 512}, {10000, 512},
		{10, 64 << 10}, {10, 1 << 20},
	} {
		b.Run(fmt.Sprintf("seq=%d/state=%s", tc.seq, sizeName(tc.state)), func(b *testing.B) {
			ctx := context.Background()
			s := newStore(b, nil)
			state := benchState(tc.state)
			history := historyEvents(tc.seq)
			run, i := "", 0
			for b.Loop() {
				if i%10 == 0 {
					b.StopTimer()
					run = fmt.Sprintf("b%d", i)
					if _, err := s.Create(ctx, run, state, history); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				i++
				_, err := s.Update(ctx, run, func(cur *Snapshot) (*Change, error) {
					return &Change{State: state, Events: []NewEvent{resultEvent(cur.Head.Seq + 1)}}, nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkLoad(b *testing.B) {
	for _, tc := range []struct{ seq, state int }{{1000, 512}, {1000, 1 << 20}} {
		b.Run(fmt.Sprintf("seq=%d/state=%s", tc.seq, sizeName(tc.state)), func(b *testing.B) {
			ctx := context.Background()
			s := newStore(b, nil)
			if _, err := s.Create(ctx, "r", benchState(tc.state), historyEvents(tc.seq)); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := s.Load(ctx, "r"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEvents measures a poll for the newest event and a full audit
// read, both at seq 1000.
func BenchmarkEvents(b *testing.B) {
	ctx := context.Background()
	s := newStore(b, nil)
	if _, err := s.Create(ctx, "r", benchState(512), historyEvents(1000)); err != nil {
		b.Fatal(err)
	}
	for _, after := range []int64{999, 0} {
		b.Run(fmt.Sprintf("after=%d", after), func(b *testing.B) {
			for b.Loop() {
				if evs, err := s.Events(ctx, "r", after, 0); err != nil || int64(len(evs)) != 1000-after {
					b.Fatal(len(evs), err)
				}
			}
		})
	}
}

func BenchmarkCreate(b *testing.B) {
	ctx := context.Background()
	s := newStore(b, nil)
	state, evs := benchState(512), historyEvents(1)
	i := 0
	for b.Loop() {
		i++
		if _, err := s.Create(ctx, fmt.Sprintf("c%d", i), state, evs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFsyncFloor is the floor a step_done cannot beat on this
// machine: one atomic replace of the state file plus one fsynced append of
// the event line, with no store logic around them.
func BenchmarkFsyncFloor(b *testing.B) {
	dir := b.TempDir()
	state := encodeEnvelope(envelope{RunID: "r", Head: genesisHash("r"), State: benchState(512)})
	line, _, _ := encodeEvent(1, genesisHash("r"), resultEvent(1))
	for b.Loop() {
		if err := atomicfile.AppendLine(filepath.Join(dir, "events.jsonl"), line, 0o600); err != nil {
			b.Fatal(err)
		}
		if err := atomicfile.WriteFile(filepath.Join(dir, "state.json"), state, 0o600); err != nil {
			b.Fatal(err)
		}
	}
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}
