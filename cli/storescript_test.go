package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/stratum-go/stratum/internal/pgtest"
)

// TestPostgresScripts runs testdata/postgres/*.txtar with every command on
// a PostgreSQL store: STRATUM_STORE (and PGDSN) is a fresh schema per
// script, and "pgsql SQL" runs SQL on it, as someone with access to the
// database could.
func TestPostgresScripts(t *testing.T) {
	pgtest.DSN(t) // skips, or fails under STRATUM_REQUIRE_POSTGRES=1, without a server
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("testdata", "postgres"),
		Setup: func(env *testscript.Env) error {
			dsn, err := pgtest.NewSchema()
			if err != nil {
				return err
			}
			env.Setenv("STRATUM_HOME", filepath.Join(env.WorkDir, ".stratum"))
			env.Setenv(EnvStore, dsn)
			env.Setenv("PGDSN", dsn)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode": cmdExitcode,
			"pgsql":    cmdPgsql,
		},
		RequireExplicitExec: true,
		UpdateScripts:       os.Getenv("UPDATE_SCRIPTS") == "1",
	})
}

// cmdPgsql implements "pgsql SQL": it runs SQL on $PGDSN and prints the
// rows of its result, one per line, columns separated by a space.
func cmdPgsql(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: pgsql SQL")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, ts.Getenv("PGDSN"))
	if err != nil {
		ts.Fatalf("pgsql: %v", err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, args[0], pgx.QueryExecModeSimpleProtocol)
	if err == nil {
		for rows.Next() {
			vals, verr := rows.Values()
			if verr != nil {
				err = verr
				break
			}
			cells := make([]string, len(vals))
			for i, v := range vals {
				cells[i] = strings.TrimSpace(strings.ReplaceAll(fmtValue(v), "\n", " "))
			}
			ts.Stdout().Write([]byte(strings.Join(cells, " ") + "\n"))
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
	}
	if err != nil && !neg {
		ts.Fatalf("pgsql: %v", err)
	}
	if err == nil && neg {
		ts.Fatalf("pgsql: unexpected success")
	}
}

func fmtValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return x
	case []byte:
		return string(x)
	}
	return fmt.Sprint(v)
}
