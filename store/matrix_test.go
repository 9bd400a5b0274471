package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The tamper matrix of issue 13 over real files: each case edits the files
// of a run with many writes as someone with write access to the state root
// could, and says where the damage is caught. docs/storage.md carries the
// same table (TestTamperMatrixDocumented keeps the two equal).
//
// Outcomes:
const (
	// caughtLocal: Load and Update refuse the run (ErrCorrupt) and Verify
	// fails; nothing is written.
	caughtLocal = "detected locally: Load, Update and Verify refuse the run"
	// caughtVerify: damage inside the history, which Load and Update do
	// not read (their cost does not depend on history); Verify fails, and
	// so do Events and Event reads that cross it.
	caughtVerify = "detected locally by Verify (and reads that cross it)"
	// caughtTail: indistinguishable from what an interrupted write leaves:
	// never acknowledged, reported by Verify, kept aside with a
	// store.repair event by the next write.
	caughtTail = "detected locally: reported by Verify, kept aside with a store.repair event by the next write"
	// caughtAnchor: every local check passes; Verify against a head kept
	// elsewhere fails.
	caughtAnchor = "detected only against an anchor (Verify --head)"
	// caughtReported: not an error, reported by Verify (head record
	// missing) and repaired by the next write; rollbacks of the run are
	// then caught only by the tail rules and an anchor.
	caughtReported = "reported by Verify (head record missing); the next write records a new one"
)

// matrixRun is a run with many writes and every version of its files.
type matrixRun struct {
	s      *FileStore
	heads  []Head
	states [][]byte // state.json after each write
	logs   [][]byte // events.jsonl after each write
	recs   [][]byte // .heads/t after each write
}

func (r *matrixRun) last() int { return len(r.heads) - 1 }

// buildMatrixRun writes a Create and 20 updates; with stateOnlyLast the
// last write changes only the state and summary (as a run's final status
// write may).
func buildMatrixRun(t *testing.T, stateOnlyLast bool) *matrixRun {
	t.Helper()
	ctx := context.Background()
	r := &matrixRun{s: newStore(t, nil)}
	save := func(h Head) {
		st, _ := os.ReadFile(r.s.pathOf(stateFile))
		lg, _ := os.ReadFile(r.s.pathOf(eventsFile))
		hd, _ := os.ReadFile(r.s.headPath("t"))
		r.heads, r.states, r.logs, r.recs = append(r.heads, h), append(r.states, st), append(r.logs, lg), append(r.recs, hd)
	}
	h, err := r.s.Create(ctx, "t", Change{State: []byte(`{"step":0}`), Summary: []byte(`{"status":"running"}`), Events: []NewEvent{ev("planned", 1), ev("ready", 2)}})
	if err != nil {
		t.Fatal(err)
	}
	save(h)
	for i := 1; i <= 20; i++ {
		h, err := r.s.Update(ctx, "t", func(cur *Snapshot) (*Change, error) {
			c := &Change{State: fmt.Appendf(nil, `{"step":%d}`, i), Summary: fmt.Appendf(nil, `{"status":"running","done":%d}`, i)}
			if i < 20 || !stateOnlyLast {
				for k := range 1 + i%3 {
					c.Events = append(c.Events, ev("result", int(cur.Head.Seq)+k+1))
				}
			}
			if i == 20 {
				c.Summary = []byte(`{"status":"completed"}`)
			}
			return c, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		save(h)
	}
	return r
}

// lineAt returns the start and end of line i (0-based) of log.
func lineAt(log []byte, i int) (int, int) {
	start := 0
	for range i {
		start += bytes.IndexByte(log[start:], '\n') + 1
	}
	return start, start + bytes.IndexByte(log[start:], '\n') + 1
}

// rehash rewrites the whole run consistently from event from on, with
// event from's data changed: what someone with full write access and this
// documentation can do. Every hash, the state check and the head record
// are recomputed.
func rehash(t *testing.T, r *matrixRun, from int64) {
	t.Helper()
	log := r.logs[r.last()]
	var out []byte
	prev := genesisHash("t")
	for seq, rest := int64(1), log; len(rest) > 0; seq++ {
		i := bytes.IndexByte(rest, '\n')
		e, err := decodeEvent(rest[:i])
		if err != nil {
			t.Fatal(err)
		}
		if seq == from {
			e.Data = []byte(`{"i":"forged"}`)
		}
		line, hash, err := encodeEvent(seq, prev, NewEvent{Type: e.Type, At: e.At, Data: e.Data}, e.Begin)
		if err != nil {
			t.Fatal(err)
		}
		out, prev, rest = append(append(out, line...), '\n'), hash, rest[i+1:]
	}
	env, err := decodeEnvelope(r.states[r.last()])
	if err != nil {
		t.Fatal(err)
	}
	env.Head, env.LogSize = prev, int64(len(out))
	writeFile(t, r.s.pathOf(eventsFile), out)
	writeFile(t, r.s.pathOf(stateFile), sealEnvelope(&env))
	rec := recordOf(env)
	os.Remove(r.s.headPath("t"))
	f, err := openSmall(r.s.headPath("t"), os.O_CREATE|os.O_WRONLY, filePerm)
	if err != nil {
		t.Fatal(err)
	}
	writeSlot(f, rec.Rev%2, encodeHeadRecord(rec))
	f.Close()
	os.Remove(r.s.pathOf(indexFile))
}

type matrixCase struct {
	name    string
	outcome string
	tamper  func(t *testing.T, r *matrixRun)
}

var tamperMatrix = []matrixCase{
	{"edit a value in an interior event", caughtVerify, func(t *testing.T, r *matrixRun) {
		start, _ := lineAt(r.logs[r.last()], 10)
		flipAt(t, r.s.pathOf(eventsFile), start+bytes.Index(r.logs[r.last()][start:], []byte(`"i":`))+4)
	}},
	{"edit a value in the head event", caughtLocal, func(t *testing.T, r *matrixRun) {
		log := r.logs[r.last()]
		start, _ := lineAt(log, int(r.heads[r.last()].Seq)-1)
		flipAt(t, r.s.pathOf(eventsFile), start+bytes.Index(log[start:], []byte(`"i":`))+4)
	}},
	{"edit a value in state.json", caughtLocal, func(t *testing.T, r *matrixRun) {
		b := r.states[r.last()]
		flipAt(t, r.s.pathOf(stateFile), bytes.Index(b, []byte(`"step":`))+7)
	}},
	{"edit state.json and recompute its check", caughtLocal, func(t *testing.T, r *matrixRun) {
		env, _ := decodeEnvelope(r.states[r.last()])
		env.State = []byte(`{"step":99}`)
		writeFile(t, r.s.pathOf(stateFile), encodeEnvelope(env))
	}},
	{"delete an interior line", caughtLocal, func(t *testing.T, r *matrixRun) {
		log := r.logs[r.last()]
		start, end := lineAt(log, 10)
		writeFile(t, r.s.pathOf(eventsFile), slicesConcat(log[:start], log[end:]))
	}},
	{"swap two interior lines", caughtVerify, func(t *testing.T, r *matrixRun) {
		log := r.logs[r.last()]
		s1, e1 := lineAt(log, 10)
		s2, e2 := lineAt(log, 11)
		writeFile(t, r.s.pathOf(eventsFile), slicesConcat(log[:s1], log[s2:e2], log[s1:e1], log[e2:]))
	}},
	{"truncate the log mid-line", caughtLocal, func(t *testing.T, r *matrixRun) {
		log := r.logs[r.last()]
		start, _ := lineAt(log, 10)
		writeFile(t, r.s.pathOf(eventsFile), log[:start+20])
	}},
	{"append garbage", caughtLocal, func(t *testing.T, r *matrixRun) {
		appendFile(t, r.s.pathOf(eventsFile), []byte("garbage\n"))
	}},
	{"append a well-formed forged line with a correct hash", caughtTail, func(t *testing.T, r *matrixRun) {
		w, _ := encodeWrite("t", r.heads[r.last()], nil, []NewEvent{{Type: "completed", At: t0, Data: []byte(`{"forged":true}`)}})
		appendFile(t, r.s.pathOf(eventsFile), w.lines)
	}},
	{"roll back state.json alone by one update", caughtLocal, func(t *testing.T, r *matrixRun) {
		writeFile(t, r.s.pathOf(stateFile), r.states[r.last()-1])
	}},
	{"roll back state.json alone by many updates", caughtLocal, func(t *testing.T, r *matrixRun) {
		writeFile(t, r.s.pathOf(stateFile), r.states[5])
	}},
	{"roll back events.jsonl alone", caughtLocal, func(t *testing.T, r *matrixRun) {
		writeFile(t, r.s.pathOf(eventsFile), r.logs[r.last()-2])
	}},
	{"roll back both to an earlier consistent pair", caughtLocal, func(t *testing.T, r *matrixRun) {
		writeFile(t, r.s.pathOf(stateFile), r.states[5])
		writeFile(t, r.s.pathOf(eventsFile), r.logs[5])
	}},
	{"roll back both and the head record", caughtAnchor, func(t *testing.T, r *matrixRun) {
		writeFile(t, r.s.pathOf(stateFile), r.states[5])
		writeFile(t, r.s.pathOf(eventsFile), r.logs[5])
		writeFile(t, r.s.headPath("t"), r.recs[5])
	}},
	{"roll back the head record by many updates", caughtLocal, func(t *testing.T, r *matrixRun) {
		writeFile(t, r.s.headPath("t"), r.recs[5])
	}},
	{"delete the head record", caughtReported, func(t *testing.T, r *matrixRun) {
		os.Remove(r.s.headPath("t"))
	}},
	{"delete the run directory", caughtLocal, func(t *testing.T, r *matrixRun) {
		os.RemoveAll(r.s.runDir("t"))
	}},
	{"delete the run directory and its head record", caughtAnchor, func(t *testing.T, r *matrixRun) {
		os.RemoveAll(r.s.runDir("t"))
		os.Remove(r.s.headPath("t"))
	}},
	{"rehash everything consistently", caughtAnchor, func(t *testing.T, r *matrixRun) { rehash(t, r, 10) }},
}

func TestTamperMatrix(t *testing.T) {
	ctx := context.Background()
	for _, variant := range []string{"last write with events", "last write state only"} {
		for _, tc := range tamperMatrix {
			t.Run(variant+"/"+tc.name, func(t *testing.T) {
				r := buildMatrixRun(t, variant == "last write state only")
				anchor := r.heads[r.last()]
				tc.tamper(t, r)
				before := dirFiles(t, r.s)

				_, errL := r.s.Load(ctx, "t")
				called := false
				_, errU := r.s.Update(ctx, "t", func(cur *Snapshot) (*Change, error) {
					called = true
					return nil, nil // look, write nothing
				})
				rep, errV := r.s.Verify(ctx, "t", VerifyOptions{})
				_, errA := r.s.Verify(ctx, "t", VerifyOptions{Head: anchor.Hash})
				corrupt := func(err error) bool { return errors.Is(err, ErrCorrupt) }
				switch tc.outcome {
				case caughtLocal:
					if !corrupt(errL) || !corrupt(errU) || !corrupt(errV) || !corrupt(errA) || called {
						t.Errorf("Load %v / Update %v (fn ran: %v) / Verify %v / anchored %v: want all corrupt", errL, errU, called, errV, errA)
					}
					if errors.Is(errL, ErrRunNotFound) {
						t.Errorf("a damaged run looks like a missing one: %v", errL)
					}
				case caughtVerify:
					if errL != nil || errU != nil || !corrupt(errV) || !corrupt(errA) {
						t.Errorf("Load %v / Update %v / Verify %v / anchored %v", errL, errU, errV, errA)
					}
					if _, err := r.s.Events(ctx, "t", 0, 0); !corrupt(err) {
						t.Errorf("Events from 0: %v", err)
					}
				case caughtTail:
					if errL != nil || errU != nil || errV != nil || errA != nil || rep.Tail.Bytes == 0 || !rep.Tail.Chained {
						t.Errorf("Load %v / Update %v / Verify %+v, %v / anchored %v", errL, errU, rep, errV, errA)
					}
				case caughtReported:
					if errL != nil || errU != nil || errV != nil || errA != nil || rep.HeadRecord != HeadRecordMissing {
						t.Errorf("Load %v / Update %v / Verify %+v, %v / anchored %v", errL, errU, rep, errV, errA)
					}
				case caughtAnchor:
					if !corrupt(errA) {
						t.Errorf("Verify against the anchor: %v, want corrupt", errA)
					}
					if errV != nil && !errors.Is(errV, ErrRunNotFound) {
						t.Errorf("a consistent rewrite fails a local check after all (%v): move the case", errV)
					}
				}
				// Nothing the store did removed or changed a byte: refusals
				// and an empty write write nothing.
				if after := dirFiles(t, r.s); !mapsEqual(before, after) {
					t.Errorf("reading and refusing changed files: %v", diffKeys(before, after))
				}
				if tc.outcome == caughtTail {
					checkNothingLost(t, r)
				}
			})
		}
	}
}

// checkNothingLost writes once more to a run holding a tail: every byte of
// the tail must end up kept aside, named by a store.repair event.
func checkNothingLost(t *testing.T, r *matrixRun) {
	t.Helper()
	ctx := context.Background()
	log, _ := os.ReadFile(r.s.pathOf(eventsFile))
	acked := r.logs[r.last()]
	tail := log[len(acked):]
	if _, err := r.s.Update(ctx, "t", appendEvents(`{"step":21}`, 1)); err != nil {
		t.Fatal(err)
	}
	rep, err := r.s.Verify(ctx, "t", VerifyOptions{Head: r.heads[r.last()].Hash})
	if err != nil || len(rep.Repairs) != 1 {
		t.Fatalf("Verify after the write: %+v, %v", rep, err)
	}
	kept, err := os.ReadFile(r.s.pathOf(rep.Repairs[0].Kept[0].Name))
	if err != nil || !bytes.Equal(kept, tail) {
		t.Errorf("the tail is not kept byte for byte: %v", err)
	}
}

// dirFiles returns every file of the state root (lock files aside) and
// its content.
func dirFiles(t *testing.T, s *FileStore) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(s.Root(), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == lockFile || d.Name() == leaseFile {
			return nil
		}
		b, _ := os.ReadFile(p)
		out[p] = string(b)
		return nil
	})
	return out
}

func diffKeys(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if b[k] != v {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k+" (new)")
		}
	}
	return out
}

// TestTamperMatrixDocumented keeps docs/storage.md's tamper table equal to
// the matrix the tests run.
func TestTamperMatrixDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "storage.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(doc), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) == 4 && strings.HasPrefix(line, "| ") {
			rows[strings.TrimSpace(cells[1])] = strings.TrimSpace(cells[2])
		}
	}
	for _, tc := range tamperMatrix {
		if got, ok := rows[tc.name]; !ok || got != tc.outcome {
			t.Errorf("docs/storage.md: row %q says %q, want %q", tc.name, got, tc.outcome)
		}
	}
}
