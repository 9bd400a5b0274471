package cli

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
			"exitcode": cmdExitcode,
			"mcprun":   cmdMCPRun,
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
