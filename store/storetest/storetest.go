// Package storetest is the contract every store.Store implementation must
// pass: Create, Update, Load, Events, Event, List and Verify semantics,
// the hash chain and its canonical form, locks and their timeout,
// concurrent writers, summaries, leases and, for stores that let a test
// damage their data (the optional Tamperer capability), the detection of
// that damage: rollbacks, removals, edits, data after the head, and the
// repair of what an interrupted write leaves. docs/storage.md describes
// the behaviour the suite checks.
//
// A backend's test calls Run with a constructor of fresh, empty stores:
//
//	func TestContract(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return store.NewMemoryWithTimeout(200 * time.Millisecond) })
//	}
//
// The lock test waits out the store's lock timeout once, so give the
// stores under test a short one. The package imports only the standard
// library and store.
package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/store"
)

// Tamperer is the optional capability of a store to have its data damaged
// the way someone with write access to its storage could (files edited,
// rows updated). The suite's tamper tests run only against stores that
// implement it. Parts are store.PartState, store.PartEvents and
// store.PartHead.
type Tamperer interface {
	// TamperEvent replaces the stored form of event seq (its line, without
	// the newline) with edit's result; a nil result deletes it.
	TamperEvent(runID string, seq int64, edit func(stored []byte) []byte) error
	// AppendLog appends raw bytes after the run's event log, as a stray
	// writer or an interrupted write could.
	AppendLog(runID string, data []byte) error
	// SaveParts captures the named parts of a run as they are now; restore
	// puts exactly those back, leaving the others as they are then.
	SaveParts(runID string, parts ...string) (restore func() error, err error)
	// RemoveRun deletes a run's data, and with headRecordToo its
	// independent head record as well.
	RemoveRun(runID string, headRecordToo bool) error
}

type config struct {
	reopen     func(t *testing.T, s store.Store) store.Store
	goroutines int
	updates    int
}

// Option adjusts Run.
type Option func(*config)

// Reopen gives the suite a way to open a second store on the same data
// (another process's view): it checks that what a write acknowledged is
// there for it.
func Reopen(f func(t *testing.T, s store.Store) store.Store) Option {
	return func(c *config) { c.reopen = f }
}

// Concurrency sets the goroutines and the updates each makes in the
// concurrent-update test (default 8 × 10).
func Concurrency(goroutines, updates int) Option {
	return func(c *config) { c.goroutines, c.updates = goroutines, updates }
}

// Run runs the contract suite against stores made by newStore, each
// fresh and empty.
func Run(t *testing.T, newStore func(t *testing.T) store.Store, opts ...Option) {
	cfg := config{goroutines: 8, updates: 10}
	for _, o := range opts {
		o(&cfg)
	}
	s := suite{newStore: newStore, cfg: cfg}
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"CreateLoad", s.createLoad},
		{"CreateRejects", s.createRejects},
		{"CreateConcurrentOneWins", s.createConcurrent},
		{"InvalidRunID", s.invalidRunID},
		{"NotFound", s.notFound},
		{"Update", s.update},
		{"UpdateRefusalsWriteNothing", s.updateRefusals},
		{"UpdateDurable", s.updateDurable},
		{"ConcurrentUpdates", s.concurrentUpdates},
		{"LockTimeout", s.lockTimeout},
		{"Events", s.events},
		{"Event", s.event},
		{"List", s.list},
		{"Summary", s.summary},
		{"Verify", s.verify},
		{"VerifyAnchor", s.verifyAnchor},
		{"Lease", s.lease},
		{"LeaseExpiry", s.leaseExpiry},
		{"LeaseRace", s.leaseRace},
		{"LeaseDoesNotBlockUpdate", s.leaseNotBlocking},
		{"Tamper", s.tamper},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

type suite struct {
	newStore func(t *testing.T) store.Store
	cfg      config
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func ev(typ string, i int) store.NewEvent {
	return store.NewEvent{Type: typ, At: t0.Add(time.Duration(i) * time.Second), Data: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}
}

func events(typ string, from, n int) []store.NewEvent {
	var out []store.NewEvent
	for i := range n {
		out = append(out, ev(typ, from+i))
	}
	return out
}

// genesis is a run's genesis hash, computed as docs/storage.md defines it.
func genesis(runID string) string {
	sum := sha256.Sum256([]byte("stratum.run.v1\n" + runID))
	return hex.EncodeToString(sum[:])
}

func mustCreate(t *testing.T, s store.Store, id, state string, n int) store.Head {
	t.Helper()
	h, err := s.Create(context.Background(), id, store.Change{State: []byte(state), Events: events("planned", 1, n)})
	if err != nil {
		t.Fatalf("Create(%s): %v", id, err)
	}
	return h
}

// write is an Update function that sets the state and appends n events.
func write(state string, n int) func(*store.Snapshot) (*store.Change, error) {
	return func(cur *store.Snapshot) (*store.Change, error) {
		return &store.Change{State: []byte(state), Events: events("result", int(cur.Head.Seq)+1, n)}, nil
	}
}

func mustUpdate(t *testing.T, s store.Store, id string, fn func(*store.Snapshot) (*store.Change, error)) store.Head {
	t.Helper()
	h, err := s.Update(context.Background(), id, fn)
	if err != nil {
		t.Fatalf("Update(%s): %v", id, err)
	}
	return h
}

func mustLoad(t *testing.T, s store.Store, id string) *store.Snapshot {
	t.Helper()
	snap, err := s.Load(context.Background(), id)
	if err != nil {
		t.Fatalf("Load(%s): %v", id, err)
	}
	return snap
}

func mustVerify(t *testing.T, s store.Store, id string) *store.VerifyReport {
	t.Helper()
	rep, err := s.Verify(context.Background(), id, store.VerifyOptions{})
	if err != nil {
		t.Fatalf("Verify(%s): %v", id, err)
	}
	return rep
}

// wantErr fails unless err wraps target.
func wantErr(t *testing.T, op string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: err = %v, want %v", op, err, target)
	}
}

// wantCorrupt fails unless err is a *store.CorruptError for part whose
// message contains text.
func wantCorrupt(t *testing.T, op string, err error, part, text string) {
	t.Helper()
	var ce *store.CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("%s: err = %v, want a *store.CorruptError", op, err)
		return
	}
	if (part != "" && ce.Part != part) || !strings.Contains(ce.Error(), text) {
		t.Errorf("%s: %q (part %q), want part %q mentioning %q", op, ce, ce.Part, part, text)
	}
}

// fingerprint is what a reader can see of a run: used to check that a
// refused or empty write changed nothing.
type fingerprint struct {
	state, summary string
	head           store.Head
	updatedAt      time.Time
	writes         int64
}

func fingerprintOf(t *testing.T, s store.Store, id string) fingerprint {
	t.Helper()
	snap := mustLoad(t, s, id)
	rep := mustVerify(t, s, id)
	fp := fingerprint{state: string(snap.State), summary: string(snap.Summary), head: snap.Head, writes: rep.Writes}
	runs, err := s.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.ID == id {
			fp.updatedAt = r.UpdatedAt
		}
	}
	return fp
}

func fmtSeconds(i int) time.Duration { return time.Duration(i) * time.Second }
