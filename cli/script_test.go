package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/stratum-go/stratum/internal/pgtest"
)

// TestMain lets testscript scripts run "stratum" in-process as a real
// command with its own exit code, stdin and stdout.
func TestMain(m *testing.M) {
	testscript.Main(pgtest.M(m), map[string]func(){
		"stratum": func() {
			os.Exit(Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
		},
	})
}

// TestScripts runs every testdata/script/*.txtar. Each script gets its own
// STRATUM_HOME under its work directory.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("testdata", "script"),
		Setup: func(env *testscript.Env) error {
			env.Setenv("STRATUM_HOME", filepath.Join(env.WorkDir, ".stratum"))
			// Leases keep their default time to live (10 s), so that a
			// drive renews well within it on a loaded machine; the scripts
			// that kill a driver and wait for its lease set a short one.
			env.Setenv("STRATUM_LEASE_TTL", "")
			// The person a decision made at this terminal records by
			// default (stratum gate, stratum run --gate ask).
			env.Setenv("USER", "tester")
			// The outputs of the real claude and codex CLIs captured in
			// agent/testdata, for fake CLIs to replay.
			captures, err := filepath.Abs(filepath.Join("..", "agent", "testdata"))
			if err != nil {
				return err
			}
			env.Setenv("CAPTURES", captures)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode":  cmdExitcode,
			"mcprun":    cmdMCPRun,
			"normalize": cmdNormalize,
		},
		RequireExplicitExec: true,
		UpdateScripts:       os.Getenv("UPDATE_SCRIPTS") == "1",
	})
}

// cmdExitcode implements "exitcode N PROG ARGS...": it runs PROG like exec
// (stdin, stdout and stderr behave the same) and fails unless PROG exits with
// status N. Scripts use it to pin exit codes, which exec alone cannot.
func cmdExitcode(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exitcode")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exitcode N PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: bad status %q", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exitcode: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], got, want)
	}
}

// What varies from one run of a script to the next, and what normalize
// writes instead, so that scripts can compare whole outputs with cmp.
var (
	runIDPattern  = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	hashPattern   = regexp.MustCompile(`\b[0-9a-f]{64}\b`)
	digestPattern = regexp.MustCompile(`\b[0-9a-f]{12}\b`)
	stampPattern  = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	clockPattern  = regexp.MustCompile(`\b\d\d:\d\d:\d\d\.\d{3}\b`)
	msPattern     = regexp.MustCompile(`\b\d+ ms\b|"(durationMs|ms)": ?\d+`)
	pidPattern    = regexp.MustCompile(`\bpid \d+\b`)
)

// cmdNormalize implements "normalize FILE...": it rewrites each file with
// the parts that change from run to run replaced by stable names: run
// ids by RUN1, RUN2, ... in order of first appearance, hashes by HASH,
// 12-digit digests by DIGEST, times by TIME and CLOCK, durations by N ms,
// pids by PID and the script's directory by $WORK. A script then
// compares the whole output with cmp (UPDATE_SCRIPTS=1 rewrites the
// expected file in the script).
func cmdNormalize(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: normalize FILE...")
	}
	for _, name := range args {
		path := ts.MkAbs(name)
		b, err := os.ReadFile(path)
		ts.Check(err)
		s := strings.ReplaceAll(string(b), ts.Getenv("WORK"), "$WORK")
		ids := map[string]string{}
		s = runIDPattern.ReplaceAllStringFunc(s, func(id string) string {
			if _, ok := ids[id]; !ok {
				ids[id] = fmt.Sprintf("RUN%d", len(ids)+1)
			}
			return ids[id]
		})
		s = hashPattern.ReplaceAllString(s, "HASH")
		s = digestPattern.ReplaceAllString(s, "DIGEST")
		s = stampPattern.ReplaceAllString(s, "TIME")
		s = clockPattern.ReplaceAllString(s, "CLOCK")
		s = msPattern.ReplaceAllStringFunc(s, func(m string) string {
			if strings.HasSuffix(m, " ms") {
				return "N ms"
			}
			k, v, _ := strings.Cut(m, ":")
			return k + ":" + v[:len(v)-len(strings.TrimLeft(v, " "))] + "N"
		})
		s = pidPattern.ReplaceAllString(s, "pid PID")
		ts.Check(os.WriteFile(path, []byte(s), 0o644))
	}
}
