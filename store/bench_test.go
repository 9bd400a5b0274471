package store

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/internal/atomicfile"
)

// The benchmarks measure one accepted step_done as the engine will issue
// it: an Update that replaces the state and appends one result event,
// both fsynced. To measure at a given history length the run is rebuilt
// (timer stopped) every 10 operations, so "seq 1000" really runs at seq
// 1000..1009.
//
//	go test ./store -run '^$' -bench . -benchtime 1000x
//	TMPDIR=/dev/shm go test ./store -run '^$' -bench . -benchtime 1000x  # no fsync cost
//
// The fsync-bound benchmarks also report the median and 90th percentile of
// single operations (p50-ms, p90-ms): on a shared disk a few stalls move
// the mean a lot, the median little.

// latencies records single-operation times for percentile metrics.
type latencies []time.Duration

func (l *latencies) measure(f func()) {
	start := time.Now()
	f()
	*l = append(*l, time.Since(start))
}

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	ms := func(q float64) float64 { return float64(l[int(q*float64(len(l)-1))]) / 1e6 }
	b.ReportMetric(ms(0.5), "p50-ms")
	b.ReportMetric(ms(0.9), "p90-ms")
}

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

// BenchmarkStepDone checks the history target: each iteration performs,
// in turn, the fsync floor (see BenchmarkFsyncFloor), the floor plus a
// head record's in-place overwrite and fdatasync (floorhead), and one
// step_done on runs at seq 10, 1000 and 10000, so that disk noise on a shared machine
// hits every lane alike. It reports each lane's median and 90th
// percentile, and the ratios of the medians (seq1000/seq10 is the target:
// at most 1.5).
func BenchmarkStepDone(b *testing.B) {
	ctx := context.Background()
	s := newStore(b, nil)
	state := benchState(512)
	floorDir := b.TempDir()
	floorState := encodeEnvelope(envelope{RunID: "r", Head: genesisHash("r"), State: state})
	floorLine, _, _ := encodeEvent(1, genesisHash("r"), resultEvent(1), true)
	// The floor with a head record: one more in-place overwrite and
	// fdatasync, what docs/decisions/0010-head-record.md adds to every write.
	floorHead, err := openSmall(filepath.Join(floorDir, "head"), os.O_CREATE|os.O_RDWR, filePerm)
	if err != nil {
		b.Fatal(err)
	}
	defer floorHead.Close()
	headRec := encodeHeadRecord(recordOf(envelope{RunID: "r", Head: genesisHash("r"), Rev: 1, Check: genesisHash("r"), Summary: []byte(`{"status":"running"}`)}))
	writeSlot(floorHead, 0, headRec)
	writeSlot(floorHead, 1, headRec)
	floorHead.Sync()
	seqs := []int{10, 1000, 10000}
	histories := map[int][]NewEvent{}
	for _, n := range seqs {
		histories[n] = historyEvents(n)
	}
	runs := map[int]string{}
	lat := map[int]*latencies{-1: {}, -2: {}}
	for _, n := range seqs {
		lat[n] = &latencies{}
	}
	i := 0
	for b.Loop() {
		if i%10 == 0 { // keep each run within 10 events of its nominal seq
			b.StopTimer()
			for _, n := range seqs {
				runs[n] = fmt.Sprintf("h%d-%d", n, i)
				if _, err := s.Create(ctx, runs[n], Change{State: state, Events: histories[n]}); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
		}
		i++
		var err error
		lat[-1].measure(func() {
			if err = atomicfile.AppendLine(filepath.Join(floorDir, "events.jsonl"), floorLine, 0o600); err == nil {
				err = atomicfile.WriteFile(filepath.Join(floorDir, "state.json"), floorState, 0o600)
			}
		})
		lat[-2].measure(func() {
			if err == nil {
				err = atomicfile.AppendLine(filepath.Join(floorDir, "events.jsonl"), floorLine, 0o600)
			}
			if err == nil {
				err = atomicfile.WriteFile(filepath.Join(floorDir, "state.json"), floorState, 0o600)
			}
			if err == nil {
				err = writeSlot(floorHead, int64(i%2), headRec)
			}
			if err == nil {
				err = floorHead.Datasync()
			}
		})
		for _, n := range seqs {
			if err != nil {
				break
			}
			lat[n].measure(func() {
				_, err = s.Update(ctx, runs[n], func(cur *Snapshot) (*Change, error) {
					return &Change{State: state, Events: []NewEvent{resultEvent(cur.Head.Seq + 1)}}, nil
				})
			})
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	p50 := func(l *latencies) float64 {
		slices.Sort(*l)
		return float64((*l)[(len(*l)-1)/2]) / 1e6
	}
	p90 := func(l *latencies) float64 { return float64((*l)[int(0.9*float64(len(*l)-1))]) / 1e6 }
	b.ReportMetric(p50(lat[-1]), "floor-p50-ms")
	b.ReportMetric(p50(lat[-2]), "floorhead-p50-ms")
	b.ReportMetric(p50(lat[-2])/p50(lat[-1]), "floorhead/floor")
	b.ReportMetric(p50(lat[10])/p50(lat[-2]), "seq10/floorhead")
	for _, n := range seqs {
		b.ReportMetric(p50(lat[n]), fmt.Sprintf("seq%d-p50-ms", n))
		b.ReportMetric(p90(lat[n]), fmt.Sprintf("seq%d-p90-ms", n))
	}
	b.ReportMetric(p50(lat[10])/p50(lat[-1]), "seq10/floor")
	b.ReportMetric(p50(lat[1000])/p50(lat[10]), "seq1000/seq10")
	b.ReportMetric(p50(lat[10000])/p50(lat[10]), "seq10000/seq10")
}

// BenchmarkUpdate measures a step_done at seq 10 with growing state
// documents (the engine's state is not the store's to bound).
func BenchmarkUpdate(b *testing.B) {
	for _, size := range []int{512, 64 << 10, 1 << 20} {
		b.Run("seq=10/state="+sizeName(size), func(b *testing.B) {
			ctx := context.Background()
			s := newStore(b, nil)
			state := benchState(size)
			history := historyEvents(10)
			run, i := "", 0
			var lat latencies
			for b.Loop() {
				if i%10 == 0 {
					b.StopTimer()
					run = fmt.Sprintf("b%d", i)
					if _, err := s.Create(ctx, run, Change{State: state, Events: history}); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				i++
				var err error
				lat.measure(func() {
					_, err = s.Update(ctx, run, func(cur *Snapshot) (*Change, error) {
						return &Change{State: state, Events: []NewEvent{resultEvent(cur.Head.Seq + 1)}}, nil
					})
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			lat.report(b)
		})
	}
}

func BenchmarkLoad(b *testing.B) {
	for _, tc := range []struct{ seq, state int }{{1000, 512}, {1000, 1 << 20}} {
		b.Run(fmt.Sprintf("seq=%d/state=%s", tc.seq, sizeName(tc.state)), func(b *testing.B) {
			ctx := context.Background()
			s := newStore(b, nil)
			if _, err := s.Create(ctx, "r", Change{State: benchState(tc.state), Events: historyEvents(tc.seq)}); err != nil {
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
	if _, err := s.Create(ctx, "r", Change{State: benchState(512), Events: historyEvents(1000)}); err != nil {
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

// BenchmarkEventsPaged reads a run of 30,000 events from the first to
// the head in pages of 1,000, as `stratum audit` does (each page but the
// last stops before the head and is read forwards through the index).
func BenchmarkEventsPaged(b *testing.B) {
	const events, page = 30000, 1000
	ctx := context.Background()
	s := newStore(b, nil)
	if _, err := s.Create(ctx, "r", Change{State: benchState(512), Events: historyEvents(events)}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		for after := int64(0); after < events; after += page {
			if evs, err := s.Events(ctx, "r", after, page); err != nil || len(evs) != page {
				b.Fatal(len(evs), err)
			}
		}
	}
}

func BenchmarkCreate(b *testing.B) {
	ctx := context.Background()
	s := newStore(b, nil)
	state, evs := benchState(512), historyEvents(1)
	i := 0
	var lat latencies
	for b.Loop() {
		i++
		var err error
		lat.measure(func() { _, err = s.Create(ctx, fmt.Sprintf("c%d", i), Change{State: state, Events: evs}) })
		if err != nil {
			b.Fatal(err)
		}
	}
	lat.report(b)
}

// BenchmarkFsyncFloor is the floor a step_done cannot beat on this
// machine: one atomic replace of the state file plus one fsynced append of
// the event line, with no store logic around them.
func BenchmarkFsyncFloor(b *testing.B) {
	dir := b.TempDir()
	state := encodeEnvelope(envelope{RunID: "r", Head: genesisHash("r"), State: benchState(512)})
	line, _, _ := encodeEvent(1, genesisHash("r"), resultEvent(1), true)
	var lat latencies
	for b.Loop() {
		var err1, err2 error
		lat.measure(func() {
			err1 = atomicfile.AppendLine(filepath.Join(dir, "events.jsonl"), line, 0o600)
			err2 = atomicfile.WriteFile(filepath.Join(dir, "state.json"), state, 0o600)
		})
		if err1 != nil || err2 != nil {
			b.Fatal(err1, err2)
		}
	}
	lat.report(b)
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

// listFixture lays out n runs under a root as Create and Update leave
// them (a state file, a log, a head record with a summary), without the
// fsyncs, which List does not depend on.
func listFixture(b *testing.B, n int) *FileStore {
	s := newStore(b, nil)
	if err := os.MkdirAll(filepath.Join(s.Root(), headsDir), dirPerm); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		id := fmt.Sprintf("run-%05d", i)
		w, _ := encodeWrite(id, Head{Hash: genesisHash(id)}, nil, historyEvents(2))
		env := envelope{RunID: id, Seq: w.head.Seq, Head: w.head.Hash, LogSize: int64(len(w.lines)), Rev: 3, SavedAt: time.Now(),
			Summary: fmt.Appendf(nil, `{"status":"running","flow":"main","steps":{"done":%d,"total":40},"waiting":["review"],"updatedAt":"2026-03-01T12:00:00Z"}`, i%40),
			State:   benchState(2048)}
		if err := os.Mkdir(s.runDir(id), dirPerm); err != nil {
			b.Fatal(err)
		}
		os.WriteFile(s.runPath(id, eventsFile), w.lines, filePerm)
		os.WriteFile(s.runPath(id, stateFile), sealEnvelope(&env), filePerm)
		f, _ := openSmall(s.headPath(id), os.O_CREATE|os.O_WRONLY, filePerm)
		writeSlot(f, env.Rev%2, encodeHeadRecord(recordOf(env)))
		f.Close()
	}
	return s
}

// BenchmarkList lists 10,000 runs with their summaries (the target is
// well under 100 ms); it reads the head records only.
func BenchmarkList(b *testing.B) {
	s := listFixture(b, 10000)
	ctx := context.Background()
	for b.Loop() {
		runs, err := s.List(ctx)
		if err != nil || len(runs) != 10000 || runs[9999].Summary == nil {
			b.Fatal(len(runs), err)
		}
	}
}

// BenchmarkEvent reads one event by seq from a run of 10,000 events:
// through the index, by bisection when the index is gone, and the way
// a caller without Event had to (Events from seq-1, which reads back from
// the head).
func BenchmarkEvent(b *testing.B) {
	ctx := context.Background()
	s := newStore(b, nil)
	if _, err := s.Create(ctx, "r", Change{State: benchState(512), Events: historyEvents(10000)}); err != nil {
		b.Fatal(err)
	}
	seqs := []int64{1, 2500, 5000, 9999}
	b.Run("index", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if _, err := s.Event(ctx, "r", seqs[i%len(seqs)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("events-from-seq", func(b *testing.B) {
		i := 0
		for b.Loop() {
			seq := seqs[i%len(seqs)]
			if _, err := s.Events(ctx, "r", seq-1, 1); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("bisect", func(b *testing.B) {
		os.Remove(s.runPath("r", indexFile))
		i := 0
		for b.Loop() {
			if _, err := s.Event(ctx, "r", seqs[i%len(seqs)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// BenchmarkMemoryUpdate is a step_done on the memory store, which engine
// scenario tests use instead of paying for fsyncs.
func BenchmarkMemoryUpdate(b *testing.B) {
	ctx := context.Background()
	m := NewMemory()
	state := benchState(512)
	if _, err := m.Create(ctx, "r", Change{State: state, Events: historyEvents(10)}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := m.Update(ctx, "r", func(cur *Snapshot) (*Change, error) {
			return &Change{State: state, Summary: []byte(`{"status":"running"}`), Events: []NewEvent{resultEvent(cur.Head.Seq + 1)}}, nil
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeEvent checks one typical stored line: the fast check
// (as a page of Events does it, with its scratch reused), decodeEvent and
// the rebuilding reference.
func BenchmarkDecodeEvent(b *testing.B) {
	ev := resultEvent(12345)
	line, _, err := encodeEvent(12345, genesisHash("r"), ev, false)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("fast", func(b *testing.B) {
		h := new(bodyHasher)
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			if _, ok := checkLineFast(line, h); !ok {
				b.Fatal("refused")
			}
		}
	})
	b.Run("decodeEvent", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			if _, err := decodeEvent(line); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("rebuilt", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			if _, err := decodeEventRebuilt(line); err != nil {
				b.Fatal(err)
			}
		}
	})
}
