// Package cli implements the stratum command line ([Main]): a dispatcher
// over small command types (one file each), each with its own flags and
// help (docs/cli.md; the guard's actions: docs/guard.md).
//
// The package is a thin front end. It parses arguments, calls the packages
// that own the behaviour (ir, expr, engine, driver, guard, migrate,
// speckit, mcp for `stratum mcp`, web for `stratum serve`) and formats
// their answers; it holds no
// business rules of its own, so that the CLI and the MCP server give the
// same answer to the same question. One composition root (system.go)
// builds the store, judge, effects policy and engine every command that
// touches runs works with, from the environment and the person's policy
// flags; only the commands that drive runs (`stratum run`, `stratum mcp`,
// `stratum serve`) add a dispatcher, and the two servers the supervisor of
// background runs and the agent-run store (driver.Background,
// driver.AgentRuns). Exit statuses are [ExitOK], [ExitFailure],
// [ExitUsage] and, for a `stratum run` stopped at a gate, [ExitGate].
// Commands read the outside world only through an [Env], which tests
// build directly.
//
// It must not be imported by any package of the module other than
// cmd/stratum.
package cli
