package pgtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Environment variables.
const (
	// EnvDSN names a PostgreSQL server to use instead of a private one.
	EnvDSN = "STRATUM_TEST_POSTGRES"
	// EnvRequire, set to 1, makes a missing PostgreSQL a test failure.
	EnvRequire = "STRATUM_REQUIRE_POSTGRES"
)

// SkipLine is what a test without PostgreSQL is skipped with.
const SkipLine = "postgres tests skipped: set STRATUM_TEST_POSTGRES=postgres://... or install PostgreSQL (initdb, pg_ctl) — .ci/run does"

// TestingM is what Main runs: *testing.M.
type TestingM interface{ Run() int }

var (
	once     sync.Once
	srv      *server // the database of this binary, nil when none
	startErr error   // why there is none
	schemas  atomic.Int64
)

// Main runs m and then stops what DSN started: call it as
// os.Exit(pgtest.Main(m)) from TestMain.
func Main(m TestingM) int {
	code := m.Run()
	if srv != nil {
		srv.stop()
	}
	return code
}

type wrapped struct{ m TestingM }

func (w wrapped) Run() int { return Main(w.m) }

// M wraps m so that running it runs Main: for TestMains that hand m to
// testscript.Main, which exits the process itself.
func M(m TestingM) TestingM { return wrapped{m} }

// DSN returns the DSN of a fresh, empty schema (the DSN's search_path),
// starting the server on first use. Without PostgreSQL it skips t, or
// fails it when STRATUM_REQUIRE_POSTGRES=1.
func DSN(t testing.TB) string {
	t.Helper()
	once.Do(func() { srv, startErr = start() })
	if startErr != nil {
		if os.Getenv(EnvRequire) == "1" || errors.Is(startErr, errConfigured) {
			t.Fatalf("PostgreSQL is required (%s=1) but cannot be used: %v", EnvRequire, startErr)
		}
		t.Skip(SkipLine + " (" + startErr.Error() + ")")
	}
	dsn, err := NewSchema()
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

// NewSchema is DSN for code without a testing.TB (a testscript Setup),
// once DSN has said there is a server.
func NewSchema() (string, error) {
	if srv == nil {
		return "", errors.New("pgtest: NewSchema before DSN found a server")
	}
	name := fmt.Sprintf("t%d", schemas.Add(1))
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, srv.dsn)
	if err != nil {
		return "", fmt.Errorf("pgtest: connect: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		return "", fmt.Errorf("pgtest: create schema: %w", err)
	}
	return WithParam(srv.dsn, "search_path", name), nil
}

// WithParam returns dsn (a URL) with a query parameter set: a run-time
// setting such as search_path or synchronous_commit.
func WithParam(dsn, key, value string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return dsn
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// errConfigured marks a failure with a server the person named: never a
// skip.
var errConfigured = errors.New("the server named by " + EnvDSN + " cannot be used")

// server is the database of this binary.
type server struct {
	dsn  string // of the binary's database
	stop func()
}

func start() (*server, error) {
	if dsn := strings.TrimSpace(os.Getenv(EnvDSN)); dsn != "" {
		s, err := external(dsn)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errConfigured, err)
		}
		return s, nil
	}
	return private()
}

// external creates a database of this binary's own on the named server.
func external(dsn string) (*server, error) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		return nil, errors.New("give the DSN as a URL (postgres://user:pass@host:port/db)")
	}
	name := fmt.Sprintf("stratum_test_%d_%d", os.Getpid(), rand.Uint32())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return nil, err
	}
	u.Path = "/" + name
	return &server{dsn: u.String(), stop: func() {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	}}, nil
}

// envHide, set to 1, makes findBinaries find nothing: how this package's
// own tests see what a machine without PostgreSQL does.
const envHide = "STRATUM_PGTEST_HIDE_BINARIES"
