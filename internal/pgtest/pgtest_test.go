package pgtest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func TestDSNGivesFreshSchemas(t *testing.T) {
	ctx := context.Background()
	a, b := DSN(t), DSN(t)
	if a == b {
		t.Fatalf("two calls gave the same DSN %s", a)
	}
	for _, dsn := range []string{a, b} {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		var schema string
		var tables int
		if err := conn.QueryRow(ctx, "SELECT current_schema(), (SELECT count(*) FROM pg_tables WHERE schemaname = current_schema())").Scan(&schema, &tables); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "CREATE TABLE x (a int)"); err != nil {
			t.Fatal(err)
		}
		conn.Close(ctx)
		if !strings.Contains(dsn, "search_path="+schema) || tables != 0 {
			t.Errorf("DSN %s: schema %q with %d tables, want its own empty schema", dsn, schema, tables)
		}
	}
}

// TestWithoutPostgres runs TestDSNGivesFreshSchemas in a child that finds
// no PostgreSQL: it is skipped with SkipLine, or fails when PostgreSQL is
// required.
func TestWithoutPostgres(t *testing.T) {
	if os.Getenv(envHide) == "1" {
		t.Skip("the child")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, require := range []string{"", "1"} {
		cmd := exec.Command(exe, "-test.run=^TestDSNGivesFreshSchemas$", "-test.v")
		cmd.Env = append(os.Environ(), envHide+"=1", EnvDSN+"=", EnvRequire+"="+require)
		out, err := cmd.CombinedOutput()
		switch {
		case require == "" && (err != nil || !strings.Contains(string(out), "--- SKIP") || !strings.Contains(string(out), SkipLine)):
			t.Errorf("without PostgreSQL: %v\n%s", err, out)
		case require == "1" && (err == nil || !strings.Contains(string(out), "PostgreSQL is required")):
			t.Errorf("without PostgreSQL, %s=1: %v\n%s", EnvRequire, err, out)
		}
	}
}
