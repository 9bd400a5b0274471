package mcp

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/store"
)

// chainSpec is a flow of n idempotent do steps, each taking sleepMs, then
// an engine fanout of three items.
func chainSpec(n, sleepMs int) string {
	var b strings.Builder
	b.WriteString("version: 1\ncontracts:\n  Out: {v: integer}\n  Check: {ok: boolean}\nflows:\n  entry: main\n  main:\n    input: {items: \"string[]\"}\n")
	fmt.Fprintf(&b, "    output: {from: \"${s%d.output}\", contract: Out}\n    steps:\n", n)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "      - id: s%d\n", i)
		if i > 1 {
			fmt.Fprintf(&b, "        after: [s%d]\n", i-1)
		}
		fmt.Fprintf(&b, "        idempotent: true\n        out: Out\n        do: 'Step %d. SLEEP_MS: %d ANSWER: {\"v\": %d}'\n", i, sleepMs, i)
	}
	fmt.Fprintf(&b, `      - id: fan
        after: [s%d]
        fanout:
          over: '${input.items}'
          concurrency: 3
          isolation: none
          require: all
          merge: sequential
          steps:
            - do: 'Check ${item}. SLEEP_MS: %d ANSWER: {"ok": true}'
              agent: codex
              out: Check
`, n, sleepMs)
	return b.String()
}

var ownerRe = regexp.MustCompile(`leaseOwner=(\S+)`)

// ownerOf reads a server's lease owner id from its log.
func ownerOf(t *testing.T, p *serverProc) string {
	t.Helper()
	var m []string
	waitFor(t, func() bool { m = ownerRe.FindStringSubmatch(p.stderr.String()); return m != nil })
	return m[1]
}

// checkFinished checks a finished background run: every step accepted
// exactly once, its chain verifies, no agent left running.
func checkFinished(t *testing.T, env *bgEnv, p *serverProc, run string) []map[string]any {
	t.Helper()
	evs := allEvents(t, p, run)
	for step, n := range acceptedResults(evs) {
		if n != 1 {
			t.Errorf("step %s accepted %d times", step, n)
		}
	}
	st, err := store.NewFileStore(filepath.Join(env.home, "flows"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Verify(context.Background(), run, store.VerifyOptions{}); err != nil {
		t.Errorf("the run's chain does not verify: %v", err)
	}
	assertAgentsGone(t, env.log)
	return evs
}

// TestBackgroundTwoServers: two servers on one state root; exactly one
// drives a background run, the other's mutations are refused naming the
// holder, and killing the holder hands the run over.
func TestBackgroundTwoServers(t *testing.T) {
	env := newBgEnv(t, "400ms")
	a, b := env.server(), env.server()
	ownerA, ownerB := ownerOf(t, a), ownerOf(t, b)
	r := a.call("stratum_flow_run_bg", map[string]any{"spec": chainSpec(6, 250), "input": map[string]any{"items": []string{"x", "y", "z"}}})
	run := runID(t, r)
	r = pollUntil(t, b, run, time.Minute, func(r result) bool { return r.Body["bg"].(map[string]any)["driver"] != nil })
	if d := r.Body["bg"].(map[string]any)["driver"]; d != ownerA {
		t.Fatalf("driver %v, want the server that started it (%s)", d, ownerA)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"stratum_resume", map[string]any{"runId": run}},
		{"stratum_step_done", map[string]any{"runId": run, "stepId": "s1", "dispatchToken": "x", "result": map[string]any{"output": map[string]any{"v": 1}}}},
		{"stratum_commit", map[string]any{"runId": run, "label": "mine"}},
	} {
		res := b.call(c.tool, c.args)
		if res.errorCode() != "run_leased" || res.Body["error"].(map[string]any)["holder"] != ownerA {
			t.Errorf("%s from the other server: %s", c.tool, res.Text)
		}
	}
	// Let the holder finish a step or two, then kill it.
	pollUntil(t, b, run, time.Minute, func(r result) bool {
		return acceptedResults(allEvents(t, b, run))["s2"] == 1
	})
	a.kill()
	r = pollUntil(t, b, run, time.Minute, func(r result) bool { return r.status() != "running" })
	if r.status() != "completed" {
		t.Fatalf("after the holder died: %s\nstderr B:\n%s", r.Text, b.stderr.String())
	}
	evs := checkFinished(t, env, b, run)
	var drivers []string
	for _, ev := range evs {
		if ev["type"] == "driver_acquired" {
			drivers = append(drivers, ev["detail"].(map[string]any)["owner"].(string))
		}
	}
	if len(drivers) != 2 || drivers[0] != ownerA || drivers[1] != ownerB {
		t.Errorf("drivers %v, want %s then %s", drivers, ownerA, ownerB)
	}
}

// TestBackgroundCrashes kills the server driving a background run at
// random moments, many times; each new server takes the run over once the
// dead one's lease has run out, and the last one completes it: no step
// accepted twice, no agent left running, the chain verifies.
func TestBackgroundCrashes(t *testing.T) {
	if testing.Short() {
		t.Skip("kills 40 servers")
	}
	const kills = 40
	env := newBgEnv(t, "100ms")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 17))
	p := env.server()
	r := p.call("stratum_flow_run_bg", map[string]any{"spec": chainSpec(60, 80), "input": map[string]any{"items": []string{"x", "y", "z"}}})
	run := runID(t, r)
	for i := 0; i < kills; i++ {
		time.Sleep(time.Duration(rng.IntN(500)) * time.Millisecond)
		p.kill()
		p = env.server()
	}
	r = pollUntil(t, p, run, time.Minute, func(r result) bool { return r.status() != "running" })
	if r.status() != "completed" {
		t.Fatalf("after %d kills: %s\nstderr:\n%s", kills, r.Text, p.stderr.String())
	}
	evs := checkFinished(t, env, p, run)
	takeOvers := 0
	for _, ev := range evs {
		if ev["type"] == "driver_acquired" {
			takeOvers++
		}
	}
	t.Logf("%d kills, %d drivers, %d events, %d agent starts", kills, takeOvers, len(evs), len(readAgentLog(t, env.log)))
}
