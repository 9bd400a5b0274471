package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tamperRun builds a run "t" with 5 events (the 3rd one larger than the
// backward reader's first window) and returns the store.
func tamperRun(t *testing.T, opts *Options) *FileStore {
	t.Helper()
	s := newStore(t, opts)
	mustCreate(t, s, "t", `{"step":0}`, 2)
	ctx := context.Background()
	if _, err := s.Update(ctx, "t", func(*Snapshot) (*Change, error) {
		return &Change{State: []byte(`{"step":1}`), Events: []NewEvent{{Type: "result", At: t0, Data: []byte(`{"pad":"` + strings.Repeat("p", 9000) + `"}`)}}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, "t", appendEvents(`{"step":2}`, 2)); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *FileStore) pathOf(file string) string { return filepath.Join(s.runDir("t"), file) }

func readLog(t *testing.T, s *FileStore) ([]byte, [][]byte) {
	t.Helper()
	b, err := os.ReadFile(s.pathOf(eventsFile))
	if err != nil {
		t.Fatal(err)
	}
	return b, bytes.SplitAfter(b, []byte("\n"))[:5]
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func flipAt(t *testing.T, path string, off int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[off] ^= 0x04
	writeFile(t, path, b)
}

// lineStart returns the offset of line i (0-based) of the log.
func lineStart(t *testing.T, s *FileStore, i int) int {
	_, lines := readLog(t, s)
	off := 0
	for _, l := range lines[:i] {
		off += len(l)
	}
	return off
}

// unackedEvents encodes n further events after the head, as an Update
// that crashed before replacing the state would have left them.
func unackedEvents(t *testing.T, s *FileStore, n int) []byte {
	snap, err := s.Load(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	var evs []NewEvent
	for i := range n {
		evs = append(evs, ev("lost", 100+i))
	}
	w, err := encodeWrite("t", snap.Head, nil, evs)
	if err != nil {
		t.Fatal(err)
	}
	return w.lines
}

func appendFile(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

// A corrupt expectation: which part, and the event seq named (0: none).
type corruptWant struct {
	part string
	seq  int64
	text string // a phrase the message must contain
}

func wantCorrupt(t *testing.T, op string, err error, w corruptWant) {
	t.Helper()
	var ce *CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
		t.Errorf("%s: err = %v, want a CorruptError", op, err)
		return
	}
	if ce.Part != w.part || ce.Seq != w.seq || ce.RunID != "t" || ce.Path == "" || !strings.Contains(ce.Error(), w.text) {
		t.Errorf("%s: %+v (%q), want part %s seq %d mentioning %q", op, ce, ce, w.part, w.seq, w.text)
	}
}

// TestTamperDetected: damage that touches acknowledged data is reported as
// corrupt by every operation that reads the damaged part, and an Update
// refused that way writes nothing. interior marks damage before the head,
// which Load and Update do not read (they check only the head; full
// checking is Verify's and Events' job).
func TestTamperDetected(t *testing.T) {
	tests := []struct {
		name     string
		tamper   func(t *testing.T, s *FileStore)
		want     corruptWant
		interior bool
	}{
		{"state: flip in the check", func(t *testing.T, s *FileStore) { flipAt(t, s.pathOf(stateFile), 12) },
			corruptWant{PartState, 0, "checksum mismatch"}, false},
		{"state: flip in the seq", func(t *testing.T, s *FileStore) {
			b, _ := os.ReadFile(s.pathOf(stateFile))
			flipAt(t, s.pathOf(stateFile), bytes.Index(b, []byte(`"seq":`))+6)
		}, corruptWant{PartState, 0, "checksum mismatch"}, false},
		{"state: flip in the document", func(t *testing.T, s *FileStore) {
			b, _ := os.ReadFile(s.pathOf(stateFile))
			flipAt(t, s.pathOf(stateFile), len(b)-4)
		}, corruptWant{PartState, 0, "checksum mismatch"}, false},
		{"state: pretty-printed by hand", func(t *testing.T, s *FileStore) {
			b, _ := os.ReadFile(s.pathOf(stateFile))
			writeFile(t, s.pathOf(stateFile), bytes.Replace(b, []byte(`"step":2`), []byte(`"step": 2`), 1))
		}, corruptWant{PartState, 0, "checksum mismatch"}, false},
		{"state: empty", func(t *testing.T, s *FileStore) { writeFile(t, s.pathOf(stateFile), nil) },
			corruptWant{PartState, 0, "not a state file"}, false},
		{"state: missing, log present", func(t *testing.T, s *FileStore) { os.Remove(s.pathOf(stateFile)) },
			corruptWant{PartState, 0, "state file is missing"}, false},
		{"state: another run's", func(t *testing.T, s *FileStore) {
			mustCreate(t, s, "other", `{}`, 5)
			b, _ := os.ReadFile(filepath.Join(s.runDir("other"), stateFile))
			writeFile(t, s.pathOf(stateFile), b)
		}, corruptWant{PartState, 0, `belongs to run "other"`}, false},
		{"events: flip in the last event's data", func(t *testing.T, s *FileStore) {
			_, lines := readLog(t, s)
			flipAt(t, s.pathOf(eventsFile), lineStart(t, s, 4)+bytes.Index(lines[4], []byte(`"i":`))+1)
		},
			corruptWant{PartEvents, 5, "hash mismatch"}, false},
		{"events: flip in the last event's hash", func(t *testing.T, s *FileStore) {
			_, lines := readLog(t, s)
			flipAt(t, s.pathOf(eventsFile), lineStart(t, s, 4)+bytes.Index(lines[4], []byte(`"hash":"`))+10)
		}, corruptWant{PartEvents, 5, "hash"}, false},
		{"events: last event deleted", func(t *testing.T, s *FileStore) {
			b, _ := readLog(t, s)
			writeFile(t, s.pathOf(eventsFile), b[:lineStart(t, s, 4)])
		}, corruptWant{PartEvents, 0, "acknowledged events are missing"}, false},
		{"events: log emptied", func(t *testing.T, s *FileStore) { writeFile(t, s.pathOf(eventsFile), nil) },
			corruptWant{PartEvents, 0, "acknowledged events are missing"}, false},
		{"events: log missing", func(t *testing.T, s *FileStore) { os.Remove(s.pathOf(eventsFile)) },
			corruptWant{PartEvents, 0, "event log is missing"}, false},
		{"events: last event replaced by a validly hashed forgery", func(t *testing.T, s *FileStore) {
			b, lines := readLog(t, s)
			e, _ := decodeEvent(bytes.TrimSuffix(lines[4], []byte("\n")))
			forged, _, _ := encodeEvent(5, e.PrevHash, NewEvent{Type: "forged", At: e.At, Data: e.Data}, e.Begin)
			writeFile(t, s.pathOf(eventsFile), append(append(b[:lineStart(t, s, 4):lineStart(t, s, 4)], forged...), '\n'))
		}, corruptWant{PartEvents, 5, "not the head"}, false},
		{"events: flip in an interior event", func(t *testing.T, s *FileStore) { flipAt(t, s.pathOf(eventsFile), lineStart(t, s, 1)+20) },
			corruptWant{PartEvents, 2, ""}, true},
		{"events: flip in the large interior event", func(t *testing.T, s *FileStore) { flipAt(t, s.pathOf(eventsFile), lineStart(t, s, 2)+5000) },
			corruptWant{PartEvents, 3, ""}, true},
		{"events: interior events swapped", func(t *testing.T, s *FileStore) {
			b, lines := readLog(t, s)
			sw := slicesConcat(lines[0], lines[2], lines[1], lines[3], lines[4])
			if len(sw) != len(b) {
				t.Fatal("swap changed the size")
			}
			writeFile(t, s.pathOf(eventsFile), sw)
		}, corruptWant{PartEvents, 0, ""}, true},
		{"events: interior event re-hashed (chain broken)", func(t *testing.T, s *FileStore) {
			b, lines := readLog(t, s)
			e, _ := decodeEvent(bytes.TrimSuffix(lines[1], []byte("\n")))
			forged, _, _ := encodeEvent(2, e.PrevHash, NewEvent{Type: "plannex", At: e.At, Data: e.Data}, e.Begin)
			out := slicesConcat(lines[0], append(forged, '\n'), b[lineStart(t, s, 2):])
			writeFile(t, s.pathOf(eventsFile), out)
		}, corruptWant{PartEvents, 3, "chain is broken"}, true}, // forward: event 3's prevHash
	}
	ctx := context.Background()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tamperRun(t, nil)
			tc.tamper(t, s)
			before := runFiles(t, s, "t")

			_, errV := s.Verify(ctx, "t", VerifyOptions{})
			w := tc.want
			if w.seq == 0 && tc.interior { // a swap is reported at the first line out of place
				var ce *CorruptError
				if errors.As(errV, &ce) {
					w.seq = ce.Seq
				}
			}
			wantCorrupt(t, "Verify", errV, w)
			_, errE := s.Events(ctx, "t", 0, 0)
			if !errors.Is(errE, ErrCorrupt) {
				t.Errorf("Events: err = %v, want ErrCorrupt", errE)
			}

			_, errL := s.Load(ctx, "t")
			_, errU := s.Update(ctx, "t", func(*Snapshot) (*Change, error) {
				if !tc.interior {
					t.Error("Update ran fn on a run with a damaged head")
				}
				return nil, nil
			})
			if tc.interior {
				if errL != nil || errU != nil {
					t.Errorf("interior damage: Load %v, Update %v (they check only the head)", errL, errU)
				}
				if _, err := s.Events(ctx, "t", 3, 0); err != nil {
					t.Errorf("events after the damage: %v", err)
				}
			} else {
				wantCorrupt(t, "Load", errL, tc.want)
				wantCorrupt(t, "Update", errU, tc.want)
			}
			if after := runFiles(t, s, "t"); !mapsEqual(before, after) {
				t.Error("a refused or read-only operation changed the run")
			}
		})
	}
}

func slicesConcat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// TestTruncateEverywhere cuts the log at every byte offset. A cut inside
// the acknowledged part is corrupt for every reader; the log as written
// plus any prefix of an unacknowledged batch is repaired.
func TestTruncateEverywhere(t *testing.T) {
	ctx := context.Background()
	s := tamperRun(t, nil)
	full, _ := readLog(t, s)
	acked := len(full)
	stateBytes, _ := os.ReadFile(s.pathOf(stateFile))
	extra := unackedEvents(t, s, 2)
	grown := append(bytes.Clone(full), extra...)
	for cut := 0; cut <= len(grown); cut += 1 + cut%37 {
		writeFile(t, s.pathOf(eventsFile), grown[:cut])
		writeFile(t, s.pathOf(stateFile), stateBytes)
		_, errL := s.Load(ctx, "t")
		_, errE := s.Events(ctx, "t", 4, 0)
		rep, errV := s.Verify(ctx, "t", VerifyOptions{})
		if cut < acked {
			for op, err := range map[string]error{"Load": errL, "Events": errE, "Verify": errV} {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("cut at %d of %d acknowledged bytes: %s = %v", cut, acked, op, err)
				}
			}
			continue
		}
		if errL != nil || errE != nil || errV != nil {
			t.Fatalf("cut at %d (tail %d bytes): Load %v, Events %v, Verify %v", cut, cut-acked, errL, errE, errV)
		}
		wantEvents := bytes.Count(grown[acked:cut], []byte("\n"))
		if rep.Tail.Bytes != int64(cut-acked) || rep.Tail.Events != wantEvents || !rep.Tail.Chained || rep.Events != 5 {
			t.Fatalf("cut at %d: report %+v", cut, rep)
		}
	}
}

// TestForgedRunID: a state rewritten (with a valid checksum) to claim a
// copied run's log as another run's is caught by the genesis hash.
func TestForgedRunID(t *testing.T) {
	ctx := context.Background()
	s := tamperRun(t, nil)
	if err := os.Rename(s.runDir("t"), s.runDir("u")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(s.runDir("u"), stateFile))
	env, err := decodeEnvelope(b)
	if err != nil {
		t.Fatal(err)
	}
	env.RunID = "u"
	writeFile(t, filepath.Join(s.runDir("u"), stateFile), encodeEnvelope(env))
	if _, err := s.Events(ctx, "u", 0, 0); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "genesis") {
		t.Errorf("Events: %v", err)
	}
	if _, err := s.Verify(ctx, "u", VerifyOptions{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Verify: %v", err)
	}
}
