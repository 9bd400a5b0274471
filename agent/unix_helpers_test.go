//go:build unix

package agent

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// writeScript writes an executable file into dir.
func writeScript(t *testing.T, dir, name, body string) string {
	return writeScriptTB(t, dir, name, body)
}

func writeScriptTB(t testing.TB, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// fake installs testdata/<src> as the executable name, first on PATH,
// and points the fake's FAKE_ARGS and FAKE_STDIN at files in a temp dir.
type fake struct {
	dir string
}

func installFake(t *testing.T, name, src string) *fake {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("testdata", src))
	if err != nil {
		t.Fatal(err)
	}
	f := &fake{dir: t.TempDir()}
	writeScript(t, f.dir, name, string(body))
	t.Setenv("PATH", f.dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKE_ARGS", f.path("args"))
	t.Setenv("FAKE_STDIN", f.path("stdin"))
	t.Setenv("FAKE_PIDFILE", f.path("pid"))
	for _, k := range []string{"FAKE_MODE", "FAKE_EXIT", "FAKE_STDERR", "FAKE_RESPONSE", "FAKE_EVENTS", "FAKE_LAST_MESSAGE"} {
		t.Setenv(k, "")
	}
	return f
}

func (f *fake) path(name string) string { return filepath.Join(f.dir, name) }

// file writes content to a file of the fake's dir and returns its path.
func (f *fake) file(t *testing.T, name, content string) string {
	t.Helper()
	p := f.path(name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// args returns the arguments the fake received (without argv[0]).
func (f *fake) args(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(f.path("args"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

func (f *fake) stdin(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(f.path("stdin"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// assertDead waits briefly for pid (read from a pid file) to be gone or a
// zombie: the group kill happened before Run returned, but the orphan's
// reaping by init is asynchronous.
func assertDead(t *testing.T, pidFile string) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	assertPidDead(t, pid)
}

// assertPidDead waits (bounded) for pid to be gone or a zombie; it only
// looks, and kills the process only once the test has failed.
func assertPidDead(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d outlived the agent", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
