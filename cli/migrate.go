package cli

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/stratum-go/stratum/migrate"
)

// migrateCmd is "stratum migrate --check FILE [--json]": the report-only
// classifier of legacy v0.x specs.
type migrateCmd struct {
	check  bool
	asJSON bool
}

func (*migrateCmd) Name() string     { return "migrate" }
func (*migrateCmd) Synopsis() string { return "--check FILE [--json]" }
func (*migrateCmd) Short() string    { return "report the legacy v0.x constructs a spec uses" }

func (*migrateCmd) Long() string {
	return `
Read a legacy v0.x Stratum spec (IR 0.1, 0.2 or 0.3) and list every legacy
construct it uses, each with its status (SUPPORTED: a direct v1 construct
exists; DIAGNOSTIC: it maps only under conditions you must check;
UNSUPPORTED: redesign or drop it), the v1 construct to re-author it as, and
every path where it occurs.

The check is report-only: it never writes, translates or emits YAML and
never modifies FILE. Findings never change the exit status: it is 0
whenever FILE could be read (even if it is not YAML, or is already a v1
spec), and 2 when FILE cannot be read or the arguments are wrong.

With --json the report is a JSON object that also gives the line and column
of every finding: {"version": "0.2" | null, "findings": [{id, status,
legacy, v1, note, line, column, at: [{path, line, column}]}]}.
`
}

func (c *migrateCmd) SetFlags(fs *flag.FlagSet) {
	fs.BoolVar(&c.check, "check", false, "classify the legacy constructs of FILE (required)")
	fs.BoolVar(&c.asJSON, "json", false, "print the report as JSON, with line and column of each finding")
}

func (c *migrateCmd) Run(ctx context.Context, env *Env, args []string) error {
	if !c.check || len(args) != 1 {
		return usagef("expected --check and exactly one FILE")
	}
	src, err := os.ReadFile(args[0])
	if err != nil {
		fmt.Fprintf(env.Stderr, "stratum migrate: %v\n", err)
		return exitCode(ExitUsage)
	}
	report := migrate.Check(src)
	if c.asJSON {
		err = report.WriteJSON(env.Stdout)
	} else {
		err = report.WriteText(env.Stdout)
	}
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}
