package guard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/judge"
)

// testEnv is a mutable fake server environment for one test.
type testEnv map[string]string

func (e testEnv) get(k string) string { return e[k] }

type fixture struct {
	t    *testing.T
	g    *Guard
	env  testEnv
	tmp  string // the allowed root: store and workspace live below it
	root string // store root
	ws   string // a workspace root
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	tmp := t.TempDir()
	f := &fixture{t: t, env: testEnv{}, tmp: tmp, root: filepath.Join(tmp, "guards"), ws: filepath.Join(tmp, "ws")}
	if err := os.MkdirAll(f.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	f.g = f.newGuard(nil)
	return f
}

// newGuard makes another Guard over the same store (as another server
// would), with the given judge.
func (f *fixture) newGuard(j judge.Judge) *Guard {
	f.t.Helper()
	g, err := New(Options{Root: f.root, Getenv: f.env.get, Judge: j, LockTimeout: 20 * time.Second, AllowedRoots: []string{f.tmp}})
	if err != nil {
		f.t.Fatal(err)
	}
	return g
}

func (f *fixture) write(rel, content string) {
	f.t.Helper()
	p := filepath.Join(f.ws, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// js decodes a JSON literal into the value model requests carry.
func js(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad JSON literal %s: %v", s, err)
	}
	return v
}

func obj(t testing.TB, s string) map[string]any {
	t.Helper()
	m, ok := js(t, s).(map[string]any)
	if !ok {
		t.Fatalf("not an object: %s", s)
	}
	return m
}

// feature is the running example: draft -> review -> done, with a
// trusted file predicate on draft->review.
func (f *fixture) featureRequest(id string) RegisterRequest {
	ws := f.ws
	return RegisterRequest{
		ResourceID: id,
		Graph:      obj(f.t, `{"draft":["review"],"review":["done","draft"],"done":[]}`),
		EdgePredicates: obj(f.t, `{"draft->review":[{"id":"plan","type":"deterministic","statement":"server_file_exists('plan.md')"}],
			"review->done":[{"statement":"server_file_contains('plan.md', 'approved')"}]}`),
		Initial:       "draft",
		Terminal:      js(f.t, `["done"]`),
		Stakes:        obj(f.t, `{"draft->review":"paranoid"}`),
		WorkspaceRoot: &ws,
	}
}

func (f *fixture) register(req RegisterRequest) *RegisterResult {
	f.t.Helper()
	res, err := f.g.Register(context.Background(), req)
	if err != nil {
		f.t.Fatalf("register: %v", err)
	}
	return res
}

func (f *fixture) transition(id, from, to string, mods ...func(*TransitionRequest)) (*TransitionResult, error) {
	req := TransitionRequest{ResourceID: id, FromState: from, ToState: to, Artifacts: map[string]any{}}
	for _, m := range mods {
		m(&req)
	}
	return f.g.Transition(context.Background(), req)
}

func (f *fixture) mustTransition(id, from, to string, mods ...func(*TransitionRequest)) *TransitionResult {
	f.t.Helper()
	res, err := f.transition(id, from, to, mods...)
	if err != nil {
		f.t.Fatalf("transition %s->%s: %v", from, to, err)
	}
	return res
}

func withKey(k string) func(*TransitionRequest) {
	return func(r *TransitionRequest) { r.IdempotencyKey = &k }
}

func withArtifacts(a map[string]any) func(*TransitionRequest) {
	return func(r *TransitionRequest) { r.Artifacts = a }
}

// wantCode fails unless err carries code.
func wantCode(t testing.TB, err error, code Code, substr ...string) {
	t.Helper()
	var ge *Error
	if !errors.As(err, &ge) || ge.Code != code {
		t.Fatalf("error %v, want code %s", err, code)
	}
	for _, s := range substr {
		if !strings.Contains(ge.Message, s) {
			t.Fatalf("error message %q does not mention %q", ge.Message, s)
		}
	}
}

func (f *fixture) dir(id string) string { return filepath.Join(f.root, DirName(id)) }

func (f *fixture) ledgerBytes(id string) []byte {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir(id), ledgerFile))
	if err != nil {
		f.t.Fatal(err)
	}
	return b
}

func (f *fixture) verify(id string, head ...string) (*VerifyResult, error) {
	req := VerifyRequest{ResourceID: id}
	if len(head) > 0 {
		req.Head = head[0]
	}
	return f.g.Verify(context.Background(), req)
}

func (f *fixture) history(id string) *HistoryResult {
	f.t.Helper()
	h, err := f.g.History(context.Background(), HistoryRequest{ResourceID: id})
	if err != nil {
		f.t.Fatal(err)
	}
	return h
}

// setTrust replaces the embedded trust root: the test-only seam (an
// unexported field no front end can reach).
func (g *Guard) setTrust(allowed []byte) { g.trust = allowed }

func sha256hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// crashDuringLedgerWrite runs op with the guard's fault seam set so that
// the next ledger append writes the first half of its line and then the
// goroutine dies (runtime.Goexit: deferred unlocks run, as a killed
// process releases its flock, and nothing after the write happens).
func (f *fixture) crashDuringLedgerWrite(op func()) {
	f.t.Helper()
	f.g.fault = func(w writeOp, path string) error {
		if w != opLedger {
			return nil
		}
		f.g.fault = nil
		fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			f.t.Error(err)
			runtime.Goexit()
		}
		fh.WriteString(`{"entry_digest":"` + strings.Repeat("0", 30))
		fh.Close()
		runtime.Goexit()
		return nil
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		op()
		f.t.Error("the operation survived its crash")
	}()
	<-done
	f.g.fault = nil
}
