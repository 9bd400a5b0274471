package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stratum-go/stratum/internal/pgtest"
	"github.com/stratum-go/stratum/store"
	"github.com/stratum-go/stratum/store/postgres"
)

const secret = "s3cret-Pw-7"

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://u:" + secret + "@db.example:5432/runs?sslmode=require", "postgres://u:xxxxx@db.example:5432/runs?sslmode=require"},
		{"postgresql://u@h/db?password=" + secret, "postgresql://u@h/db?password=xxxxx"},
		{"postgres:///db?host=/tmp/s", "postgres:///db?host=/tmp/s"},
		{"host=h user=u password=" + secret + " dbname=d", "host=h user=u password=xxxxx dbname=d"},
		{"host=h password='" + secret + " x' dbname=d", "host=h password=xxxxx dbname=d"},
		{"postgres://u:" + secret + "@h:port/db%zz", "postgres://..."},
	} {
		if got := postgres.Redact(tc.in); got != tc.want || strings.Contains(got, secret) {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestErrorsHideThePassword opens stores that cannot be opened: no error
// names the password.
func TestErrorsHideThePassword(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn := pgtest.DSN(t)
	wrongPassword := strings.Replace(dsn, "postgres://postgres@", "postgres://nobody:"+secret+"@", 1)
	for _, d := range []string{
		"postgres://u:" + secret + "@127.0.0.1:1/db?sslmode=disable&connect_timeout=2",
		"postgres://u:" + secret + "@host:port/db",
		"postgres://u:" + secret + "@h/db?sslmode=bogus",
		"host=127.0.0.1 port=1 user=u password=" + secret + " dbname=d connect_timeout=2",
		"host=127.0.0.1 port=1 user=u password='" + secret + "' sslmode=bogus",
		wrongPassword,
	} {
		s, err := postgres.Open(ctx, d, nil)
		if err == nil {
			s.Close()
			t.Errorf("Open(%s) succeeded", postgres.Redact(d))
			continue
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(fmt.Sprintf("%+v", err), secret) {
			t.Errorf("Open(%s): the error names the password: %v", postgres.Redact(d), err)
		}
	}
	s := open(t, dsn, 0)
	if strings.Contains(s.String(), secret) {
		t.Error(s)
	}
}

// TestMigrate: processes starting at once on an empty schema all open it
// (one migrates, the others wait and find it done); opening again is one
// query; a schema newer than the program is refused.
func TestMigrate(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			s, err := postgres.Open(ctx, dsn, nil)
			if err == nil {
				_, err = s.List(ctx)
				s.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n, v int
	if err := conn.QueryRow(ctx, `SELECT count(*), max(version) FROM stratum_schema`).Scan(&n, &v); err != nil || n != postgres.SchemaVersion || v != postgres.SchemaVersion {
		t.Errorf("schema versions recorded: %d rows, max %d, %v; want %d", n, v, err, postgres.SchemaVersion)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO stratum_schema (version) VALUES (99)`); err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.Open(ctx, dsn, nil); !errors.Is(err, postgres.ErrSchemaNewer) {
		t.Errorf("Open of a newer schema: %v, want ErrSchemaNewer", err)
	}
}

// TestWatch: a follower is woken after each write of its run, and leaves
// no registration behind when it stops.
func TestWatch(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	s := open(t, dsn, 0)
	if _, err := s.Create(ctx, "w", store.Change{State: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	ch, err := s.Watch(wctx, "w")
	if err != nil {
		t.Fatal(err)
	}
	other := open(t, dsn, 0) // another process writes
	for i := range 3 {
		if _, err := other.Update(ctx, "w", func(*store.Snapshot) (*store.Change, error) {
			return &store.Change{Events: evs(i+1, 1)}, nil
		}); err != nil {
			t.Fatal(err)
		}
		select {
		case _, ok := <-ch:
			if !ok {
				t.Fatal("the channel closed")
			}
		case <-time.After(time.Minute): // a guard against a hang, not a timing assertion
			t.Fatalf("no wake-up after write %d", i+1)
		}
	}
	stop()
	for range ch {
	}
	var n int
	if err := s2pool(t, dsn).QueryRow(ctx, `SELECT count(*) FROM stratum_watchers`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d registrations left after the follower stopped (%v)", n, err)
	}
	if _, err := s.Watch(ctx, "../x"); !errors.Is(err, store.ErrInvalidRunID) {
		t.Errorf("Watch of a bad id: %v", err)
	}
}

func s2pool(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}
