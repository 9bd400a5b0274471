//go:build unix

package guard

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func init() { childPrograms["GUARD_TEST_INTRUDER"] = intruder }

// intruder is the child of TestOtherUserCannotReadOrBlock, running as
// another user: GUARD_TEST_INTRUDER=read prints "read" or "denied" for
// GUARD_TEST_PATH; =lock opens and flocks it, prints "held" (then holds
// it until its stdin closes) or "denied".
func intruder() int {
	path := os.Getenv("GUARD_TEST_PATH")
	switch os.Getenv("GUARD_TEST_INTRUDER") {
	case "read":
		if _, err := os.ReadFile(path); err != nil {
			fmt.Println("denied:", err)
		} else {
			fmt.Println("read")
		}
	case "lock":
		f, err := os.Open(path) // flock needs no write access
		if err == nil {
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		}
		if err != nil {
			fmt.Println("denied:", err)
			return 0
		}
		fmt.Println("held")
		io.Copy(io.Discard, os.Stdin) // hold until the test lets go
	}
	return 0
}

// TestOtherUserCannotReadOrBlock runs a second local user (nobody) against
// a resource: it cannot read the ledger, and cannot open the lock file,
// so it cannot make the owner's writes fail with lock_timeout. A store
// left 0755/0644 by an older Stratum shows both attacks working, until
// the owner's next mutation tightens the modes. The store root itself is
// left world-readable here (as a user-chosen STRATUM_GUARDS_DIR may be):
// the resource directory's 0700 is what protects.
//
// It needs root (to start a child as nobody); as another user it skips.
// Run it with: sudo go test ./guard/ -run TestOtherUserCannotReadOrBlock
func TestOtherUserCannotReadOrBlock(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a child process as nobody; run: sudo go test ./guard/ -run TestOtherUserCannotReadOrBlock")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)
	// A tree the other user can traverse (t.TempDir is 0700).
	base, err := os.MkdirTemp("", "guard-otheruser-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	root, ws, bin := filepath.Join(base, "guards"), filepath.Join(base, "ws"), filepath.Join(base, "guard.test")
	for _, d := range []string{base, root, ws} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chmod(d, 0o755)
	}
	exe, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, exe, 0o755); err != nil {
		t.Fatal(err)
	}
	g, err := New(Options{Root: root, AllowedRoots: []string{base}, LockTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	graph := map[string]any{"a": []any{"b"}, "b": []any{"a"}}
	if _, err := g.Register(ctx, RegisterRequest{ResourceID: "r", Graph: graph, EdgePredicates: map[string]any{}, Initial: "a", WorkspaceRoot: &ws}); err != nil {
		t.Fatal(err)
	}
	state := "a"
	move := func() error {
		to := map[string]string{"a": "b", "b": "a"}[state]
		res, err := g.Transition(ctx, TransitionRequest{ResourceID: "r", FromState: state, ToState: to, Artifacts: map[string]any{}})
		if err == nil {
			state = res.CurrentState
		}
		return err
	}
	if err := move(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, DirName("r"))
	// run starts the intruder; for "lock" it returns with the lock held
	// (or refused) and a function that lets it go.
	run := func(mode, path string) (string, func()) {
		cmd := exec.Command(bin, "-test.run=^$")
		cmd.Dir = base
		cmd.Env = []string{"GUARD_TEST_INTRUDER=" + mode, "GUARD_TEST_PATH=" + path}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		return strings.TrimSpace(line), func() { stdin.Close(); cmd.Wait() }
	}
	ledgerPath, lockPath := filepath.Join(dir, ledgerFile), filepath.Join(dir, lockFile)

	check := func(stage string, wantRead, wantHold bool) {
		t.Helper()
		got, done := run("read", ledgerPath)
		done()
		if (got == "read") != wantRead {
			t.Fatalf("%s: the other user reading the ledger: %s", stage, got)
		}
		got, release := run("lock", lockPath)
		err := move()
		release()
		if (got == "held") != wantHold {
			t.Fatalf("%s: the other user holding the lock: %s", stage, got)
		}
		if wantHold {
			wantCode(t, err, CodeLockTimeout)
		} else if err != nil {
			t.Fatalf("%s: the owner's transition while the other user tried the lock: %v", stage, err)
		}
	}
	check("as written", false, false)
	for _, p := range []string{dir, ledgerPath, lockPath, filepath.Join(dir, registryFile)} {
		if fi, _ := os.Stat(p); fi.Mode().Perm()&0o077 != 0 {
			t.Fatalf("%s is mode %04o", filepath.Base(p), fi.Mode().Perm())
		}
	}

	// A store written by an older Stratum: both attacks work...
	os.Chmod(dir, 0o755)
	for _, f := range []string{ledgerPath, lockPath, filepath.Join(dir, registryFile), filepath.Join(dir, markerFile)} {
		os.Chmod(f, 0o644)
	}
	check("0755/0644 store", true, true)
	// ...until the owner's next mutation has tightened the modes.
	if err := move(); err != nil {
		t.Fatal(err)
	}
	check("after the next mutation", false, false)
}
