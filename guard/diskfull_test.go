//go:build unix

package guard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fsizeAnswer is what the child of TestFullDiskAnswerIsTruthful was told.
type fsizeAnswer struct {
	Status    string `json:"status,omitempty"`
	LedgerRef string `json:"ledger_ref,omitempty"`
	Code      Code   `json:"code,omitempty"`
	Message   string `json:"message,omitempty"`
	Warning   string `json:"warning,omitempty"`
}

func init() { childPrograms["GUARD_TEST_FSIZE"] = fsizeWorker }

// fsizeWorker is the child: it lowers RLIMIT_FSIZE (writes past the limit
// fail with EFBIG, as on a full disk; SIGXFSZ is ignored so that the
// write returns the error instead of killing the process) and attempts
// one transition a -> b.
func fsizeWorker() int {
	limit, err := strconv.ParseUint(os.Getenv("GUARD_TEST_FSIZE"), 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	g, err := New(Options{Root: os.Getenv("GUARD_TEST_ROOT"), LockTimeout: time.Minute, AllowedRoots: []string{os.Getenv("GUARD_TEST_ALLOWED")}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	signal.Ignore(syscall.SIGXFSZ)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	key := os.Getenv("GUARD_TEST_KEY")
	res, err := g.Transition(context.Background(), TransitionRequest{ResourceID: os.Getenv("GUARD_TEST_ID"),
		FromState: "a", ToState: "b", Artifacts: map[string]any{}, IdempotencyKey: &key})
	var a fsizeAnswer
	if err != nil {
		e := Envelope(err)
		a.Code, a.Message = e.ErrorType, e.Message
	} else {
		a.Status, a.LedgerRef = res.Status, res.LedgerRef
		a.Warning = warningOf(res)
	}
	b, _ := json.Marshal(a)
	os.Stdout.Write(append(b, '\n'))
	return 0
}

// TestFullDiskAnswerIsTruthful runs a transition in a child process whose
// file size limit makes one of the writes fail for real, for a sweep of
// limits that makes each write in turn the one that fails, with a large
// registry (the registry write fails first) and with a large ledger (the
// ledger append fails first). Whatever the child was told must be what
// happened: "applied" only if the ledger holds that applied entry, an
// error only if nothing was recorded (and then a retry with the same key
// evaluates afresh rather than replaying), and the resource must verify
// afterwards.
func TestFullDiskAnswerIsTruthful(t *testing.T) {
	f := newFixture(t)
	pad := strings.Repeat("x", 6000)
	scenarios := []struct {
		name     string
		preds    map[string]any
		refusals int // refused attempts written first, to grow the ledger
	}{
		{"large registry", map[string]any{"b->c": []any{map[string]any{"type": "judged", "statement": "never used", "note": pad}}}, 0},
		{"large ledger", map[string]any{"a->c": []any{map[string]any{"statement": "server_file_exists('never')"}}}, 3},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			sizes := map[string]int64{}
			last, appliedInARow := "", 0
			for limit := int64(0); limit <= 9000; limit += 500 {
				id := fmt.Sprintf("%s-%d", sc.name, limit)
				f.register(RegisterRequest{ResourceID: id, Graph: obj(t, `{"a":["b","c"],"b":["c"],"c":[]}`), EdgePredicates: sc.preds, Initial: "a", WorkspaceRoot: &f.ws})
				for range sc.refusals {
					if r := f.mustTransition(id, "a", "c"); r.Status != "refused" {
						t.Fatal(r.Status)
					}
				}
				for _, name := range []string{registryFile, ledgerFile} {
					if fi, err := os.Stat(filepath.Join(f.dir(id), name)); err == nil {
						sizes[name] = fi.Size()
					}
				}
				before, _ := os.ReadFile(filepath.Join(f.dir(id), ledgerFile))
				key := "k"
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), "GUARD_TEST_FSIZE="+strconv.FormatInt(limit, 10), "GUARD_TEST_ROOT="+f.root,
					"GUARD_TEST_ALLOWED="+f.tmp, "GUARD_TEST_ID="+id, "GUARD_TEST_KEY="+key)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("limit %d: child: %v\n%s", limit, err, stderr.String())
				}
				var a fsizeAnswer
				if err := json.Unmarshal(out, &a); err != nil {
					t.Fatalf("limit %d: child said %q", limit, out)
				}
				h := f.history(id)
				var applied *LedgerEntry
				for i := range h.Ledger {
					if e := &h.Ledger[i]; e.Outcome == "applied" {
						applied = e
					}
				}
				if a.Status == "applied" {
					appliedInARow++
				} else {
					appliedInARow = 0
				}
				switch {
				case a.Status == "applied":
					if applied == nil || applied.EntryDigest != a.LedgerRef || h.CurrentState != "b" {
						t.Fatalf("limit %d: told applied (%s) but the ledger says otherwise (state %s)", limit, a.LedgerRef, h.CurrentState)
					}
				case a.Code != "":
					if applied != nil || h.CurrentState != "a" {
						t.Fatalf("limit %d: told %s (%s) but the transition was applied", limit, a.Code, a.Message)
					}
					if after, _ := os.ReadFile(filepath.Join(f.dir(id), ledgerFile)); !bytes.Equal(after, before) {
						t.Fatalf("limit %d: a failed append left %q behind", limit, after[len(before):])
					}
					res, err := f.transition(id, "a", "b", withKey(key))
					if err != nil || res.Status != "applied" {
						t.Fatalf("limit %d: retry after %s: %+v %v", limit, a.Code, res, err)
					}
				default:
					t.Fatalf("limit %d: unexpected answer %+v", limit, a)
				}
				if _, err := f.verify(id); err != nil {
					t.Fatalf("limit %d: after %+v: verify: %v", limit, a, err)
				}
				what := a.Status + string(a.Code) + a.Warning
				if a.Code != "" {
					what += fmt.Sprint(strings.Contains(a.Message, "append"))
				}
				if what != last {
					t.Logf("limit %5d: %+v", limit, a)
					last = what
				}
				if appliedInARow == 2 {
					break // every write fits from here on
				}
			}
			t.Logf("sizes before the transition: %v", sizes)
		})
	}
}

func warningOf(r *TransitionResult) string { return r.Warning }
