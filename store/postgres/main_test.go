package postgres_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stratum-go/stratum/internal/pgtest"
	"github.com/stratum-go/stratum/store/postgres"
)

// TestMain starts the private PostgreSQL server on first use and stops it
// after the tests; with STRATUM_POSTGRES_CHILD set, the binary is the
// child process of a process test instead.
func TestMain(m *testing.M) {
	if role := os.Getenv(envChild); role != "" {
		os.Exit(runChild(role))
	}
	os.Exit(pgtest.Main(m))
}

// open opens a store on dsn, closed when t ends.
func open(t testing.TB, dsn string, lockTimeout time.Duration) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), dsn, &postgres.Options{LockTimeout: lockTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}
