//go:build unix

package pgtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// binaries are the PostgreSQL programs a private server needs.
type binaries struct{ initdb, postgres string }

// findBinaries looks on PATH, then under Debian's /usr/lib/postgresql.
func findBinaries() (binaries, error) {
	if os.Getenv(envHide) == "1" {
		return binaries{}, errors.New("initdb and postgres hidden by " + envHide)
	}
	initdb, err1 := exec.LookPath("initdb")
	postgres, err2 := exec.LookPath("postgres")
	if err1 == nil && err2 == nil {
		return binaries{initdb, postgres}, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return versionOf(b) - versionOf(a) }) // newest first
	for _, d := range dirs {
		b := binaries{filepath.Join(d, "initdb"), filepath.Join(d, "postgres")}
		if isFile(b.initdb) && isFile(b.postgres) {
			return b, nil
		}
	}
	return binaries{}, errors.New("initdb and postgres not found on PATH or under /usr/lib/postgresql")
}

func versionOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// credential is who runs the server: nil (this process's user) unless we
// are root, which PostgreSQL refuses; then the "postgres" user.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, errors.New("running as root, and there is no postgres user to run the server as")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func chown(path string, cred *syscall.Credential) error {
	if cred == nil {
		return nil
	}
	return filepath.Walk(path, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(cred.Uid), int(cred.Gid))
	})
}

func command(cred *syscall.Credential, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	return cmd
}

const dirPrefix = "stratum-pgtest-"

// private starts a server of this binary's own.
func private() (*server, error) {
	bins, err := findBinaries()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	removeStale()
	template, err := templateCluster(bins, cred)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(dir)
		}
	}()
	if err := os.WriteFile(filepath.Join(dir, "owner"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if out, err := exec.Command("cp", "-a", template, data).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("copy the template cluster: %v: %s", err, out)
	}
	if err := chown(dir, cred); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "postgres.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := command(cred, bins.postgres, "-D", data, "-k", dir, "-p", "5432",
		"-c", "listen_addresses=", "-c", "max_connections=300", "-c", "fsync=on", "-c", "synchronous_commit=on")
	quitWithParent(cmd.SysProcAttr)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := startLocked(cmd); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		cmd.Process.Signal(syscall.SIGINT) // fast shutdown
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		os.RemoveAll(dir)
	}
	dsn := func(db string) string {
		return "postgres://postgres@/" + db + "?host=" + url.QueryEscape(dir) + "&port=5432&sslmode=disable"
	}
	if err := waitReady(dsn("postgres"), exited); err != nil {
		stop()
		log, _ := os.ReadFile(filepath.Join(dir, "postgres.log"))
		return nil, fmt.Errorf("postgres did not start: %v: %s", err, lastLines(string(log), 5))
	}
	// The cluster is this binary's own: its "postgres" database is the
	// binary's database (a CREATE DATABASE would cost a copy of template1).
	ok = true
	return &server{dsn: dsn("postgres"), stop: stop}, nil
}

func waitReady(dsn string, exited <-chan error) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, dsn)
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return nil
		}
		select {
		case werr := <-exited:
			return fmt.Errorf("the server exited: %v", werr)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return err
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// templateCluster returns a data directory made by initdb, made once per
// PostgreSQL installation and user and kept in the temporary directory.
// Concurrent test binaries each make one and the first rename wins.
func templateCluster(bins binaries, cred *syscall.Credential) (string, error) {
	version, err := exec.Command(bins.postgres, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", bins.postgres, err)
	}
	sum := sha256.Sum256([]byte(bins.initdb + "\n" + string(version)))
	final := filepath.Join(os.TempDir(), fmt.Sprintf("stratum-pgtemplate-%s-%d", hex.EncodeToString(sum[:6]), os.Getuid()))
	data := filepath.Join(final, "data")
	if isFile(filepath.Join(final, "complete")) {
		return data, nil
	}
	tmp, err := os.MkdirTemp("", "stratum-pgtemplate-new-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := chown(tmp, cred); err != nil {
		return "", err
	}
	cmd := command(cred, bins.initdb, "-D", filepath.Join(tmp, "data"), "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("initdb: %v: %s", err, lastLines(string(out), 5))
	}
	if err := os.WriteFile(filepath.Join(tmp, "complete"), nil, 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, final); err != nil && !isFile(filepath.Join(final, "complete")) {
		return "", fmt.Errorf("keep the template cluster: %w", err)
	}
	return data, nil
}

// removeStale removes the directories of private servers whose test
// binary is gone (killed before it could stop its server).
func removeStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "owner"))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(string(b))
		if err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(d)
		}
	}
}

// startLocked starts cmd from a goroutine locked to its OS thread for the
// life of the process. The kernel sends the parent-death signal when the
// thread that forked the child ends, and the Go runtime ends a thread when
// a goroutine locked to it returns (docs/decisions/0040): a thread that
// never ends keeps the server alive exactly as long as the test binary.
func startLocked(cmd *exec.Cmd) error {
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked
		done <- cmd.Start()
		select {}
	}()
	return <-done
}
