package guard

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stratum-go/stratum/guard/internal/ledger"
)

// childPrograms are the programs the test binary runs as when re-executed
// with the variable named set: TestConcurrentProcesses's worker, and those
// of the Unix-only tests (which add themselves where they build).
var childPrograms = map[string]func() int{"GUARD_TEST_WORKER": worker}

// TestMain doubles as the worker program of TestConcurrentProcesses: the
// test binary re-executed with GUARD_TEST_WORKER set hammers one resource
// and reports what it got, one JSON line per attempt.
func TestMain(m *testing.M) {
	for name, program := range childPrograms {
		if os.Getenv(name) != "" {
			os.Exit(program())
		}
	}
	os.Exit(m.Run())
}

// attempt is one worker's report.
type attempt struct {
	Key       string `json:"key"`
	From      string `json:"from"`
	To        string `json:"to"`
	Status    string `json:"status,omitempty"`
	LedgerRef string `json:"ledger_ref,omitempty"`
	Code      Code   `json:"code,omitempty"`
}

// concurrencyGraph: a small cycle with a shortcut; "c->a" needs a file
// that never exists (always refused), the rest have no predicates.
var concurrencyGraph = map[string][]string{"a": {"b", "c"}, "b": {"c", "a"}, "c": {"a", "b"}}

func worker() int {
	root, id := os.Getenv("GUARD_TEST_ROOT"), os.Getenv("GUARD_TEST_ID")
	name := os.Getenv("GUARD_TEST_WORKER")
	goroutines, _ := strconv.Atoi(os.Getenv("GUARD_TEST_GOROUTINES"))
	attempts, _ := strconv.Atoi(os.Getenv("GUARD_TEST_ATTEMPTS"))
	g, err := New(Options{Root: root, LockTimeout: 2 * time.Minute, AllowedRoots: []string{os.Getenv("GUARD_TEST_ALLOWED")}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	report := func(a attempt) {
		mu.Lock()
		defer mu.Unlock()
		b, _ := json.Marshal(a)
		out.Write(append(b, '\n'))
	}
	var wg sync.WaitGroup
	for gi := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(gi)))
			ctx := context.Background()
			for i := range attempts {
				h, err := g.History(ctx, HistoryRequest{ResourceID: id})
				if err != nil {
					report(attempt{Code: CodeOf(err)})
					continue
				}
				from := h.CurrentState
				targets := concurrencyGraph[from]
				to := targets[rng.IntN(len(targets))]
				if rng.IntN(10) == 0 {
					to = "z" // an illegal edge now and then
				}
				key := fmt.Sprintf("%s-%d-%d", name, gi, i)
				req := TransitionRequest{ResourceID: id, FromState: from, ToState: to, Artifacts: map[string]any{"by": key}, IdempotencyKey: &key}
				for range 1 + rng.IntN(2) { // sometimes retry the same request
					res, err := g.Transition(ctx, req)
					a := attempt{Key: key, From: from, To: to, Code: CodeOf(err)}
					if res != nil {
						a.Status, a.LedgerRef = res.Status, res.LedgerRef
					}
					report(a)
				}
			}
		}()
	}
	wg.Wait()
	if err := out.Flush(); err != nil {
		return 3
	}
	return 0
}

// TestConcurrentProcesses runs several processes, each with several
// goroutines, transitioning one resource at once. The ledger must stay a
// valid chain, every committed attempt must be recorded exactly once, and
// the state must move only along declared edges.
func TestConcurrentProcesses(t *testing.T) {
	const processes, goroutines, attempts = 4, 2, 8
	f := newFixture(t)
	id := "race:1"
	ws := f.ws
	graph := map[string]any{}
	for k, v := range concurrencyGraph {
		targets := make([]any, len(v))
		for i, s := range v {
			targets[i] = s
		}
		graph[k] = targets
	}
	f.register(RegisterRequest{ResourceID: id, Graph: graph, Initial: "a", WorkspaceRoot: &ws,
		EdgePredicates: obj(t, `{"c->a":[{"statement":"server_file_exists('never')"}]}`)})

	var wg sync.WaitGroup
	outputs := make([][]byte, processes)
	errs := make([]error, processes)
	for p := range processes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(),
				"GUARD_TEST_WORKER=w"+strconv.Itoa(p),
				"GUARD_TEST_ROOT="+f.root, "GUARD_TEST_ID="+id, "GUARD_TEST_ALLOWED="+f.tmp,
				"GUARD_TEST_GOROUTINES="+strconv.Itoa(goroutines), "GUARD_TEST_ATTEMPTS="+strconv.Itoa(attempts))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			outputs[p], errs[p] = cmd.Output()
			if errs[p] != nil {
				errs[p] = fmt.Errorf("worker %d: %v\n%s", p, errs[p], stderr.String())
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	data, err := os.ReadFile(filepath.Join(f.dir(id), ledgerFile))
	if err != nil {
		t.Fatal(err)
	}
	log, err := ledger.ParseStrict(data)
	if err != nil {
		t.Fatalf("the ledger is not a valid chain: %v", err)
	}

	// What the workers were told.
	committed := map[string]string{} // ledger_ref -> key
	keysSeen := map[string]string{}  // key -> ledger_ref of its first commit
	counts := map[string]int{}
	for _, out := range outputs {
		for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
			var a attempt
			if err := json.Unmarshal(line, &a); err != nil {
				t.Fatalf("worker output %q: %v", line, err)
			}
			counts[a.Status+string(a.Code)]++
			switch {
			case a.Status == "applied" || a.Status == "refused":
				if prev, dup := committed[a.LedgerRef]; dup {
					t.Fatalf("ledger ref %s reported for both %s and %s", a.LedgerRef, prev, a.Key)
				}
				committed[a.LedgerRef] = a.Key
				if ref, ok := keysSeen[a.Key]; ok && ref != a.LedgerRef {
					t.Fatalf("key %s committed twice", a.Key)
				}
				keysSeen[a.Key] = a.LedgerRef
			case a.Status == "replayed":
				// A retry: it must point at the key's one entry (checked below).
			case a.Code == CodeStaleFromState || a.Code == CodeIllegalEdge:
				// Lost the race, or asked for an undeclared edge: nothing written.
			default:
				t.Fatalf("unexpected outcome %+v", a)
			}
		}
	}
	// Every committed attempt is in the ledger exactly once, and the ledger
	// holds nothing else.
	if len(log.Entries) != len(committed) {
		t.Fatalf("ledger has %d entries, workers were told of %d commits (%v)", len(log.Entries), len(committed), counts)
	}
	keyCount := map[string]int{}
	state := "a"
	for i, e := range log.Entries {
		key, ok := committed[e.EntryDigest]
		if !ok {
			t.Fatalf("entry %d (%s) was never reported to a worker", i, e.EntryDigest)
		}
		if e.IdempotencyKey == nil || *e.IdempotencyKey != key {
			t.Fatalf("entry %d carries key %v, want %s", i, e.IdempotencyKey, key)
		}
		keyCount[key]++
		// Every attempt was evaluated from the state current at its commit.
		if e.FromState != state {
			t.Fatalf("entry %d moves from %s but the state was %s", i, e.FromState, state)
		}
		legal := false
		for _, to := range concurrencyGraph[e.FromState] {
			legal = legal || to == e.ToState
		}
		if !legal {
			t.Fatalf("entry %d follows undeclared edge %s->%s", i, e.FromState, e.ToState)
		}
		if e.Outcome == "applied" {
			state = e.ToState
		} else if e.FromState != "c" || e.ToState != "a" {
			t.Fatalf("entry %d refused an unguarded edge", i)
		}
	}
	for k, n := range keyCount {
		if n != 1 {
			t.Fatalf("key %s recorded %d times", k, n)
		}
	}
	if h := f.history(id); h.CurrentState != state {
		t.Fatalf("history says %s, the ledger walk says %s", h.CurrentState, state)
	}
	t.Logf("outcomes: %v; %d ledger entries", counts, len(log.Entries))
	if counts["applied"] < 3 || counts["replayed"] == 0 {
		t.Fatalf("the run exercised too little: %v", counts)
	}
}

// TestReadersDuringWrites: history, verify and authorize take no lock,
// and a writer changes registry.json and the ledger in separate writes;
// a reader that lands between them must never report tampering (it looks
// again under the lock before it does).
func TestReadersDuringWrites(t *testing.T) {
	f := newFixture(t)
	id := "busy"
	f.register(RegisterRequest{ResourceID: id, Graph: obj(t, `{"a":["b"],"b":["a"]}`), EdgePredicates: obj(t, `{}`), Initial: "a"})
	ctx := context.Background()
	done := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []error
	reads := 0
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				var err error
				switch r {
				case 0:
					_, err = f.g.History(ctx, HistoryRequest{ResourceID: id})
				case 1:
					_, err = f.g.Verify(ctx, VerifyRequest{ResourceID: id})
				case 2:
					_, err = f.g.Authorize(ctx, AuthorizeRequest{Kind: "override", ResourceID: id, FromState: "a", ToState: "b", Rationale: "r"})
				}
				mu.Lock()
				reads++
				if err != nil {
					failures = append(failures, err)
				}
				mu.Unlock()
			}
		}()
	}
	state := "a"
	for range 40 {
		to := map[string]string{"a": "b", "b": "a"}[state]
		state = f.mustTransition(id, state, to).CurrentState
	}
	close(done)
	wg.Wait()
	t.Logf("%d reads during 40 transitions", reads)
	if len(failures) > 0 {
		t.Fatalf("%d of %d reads failed during writes, first: %v", len(failures), reads, failures[0])
	}
}
