// Package cli implements the stratum command line: a dispatcher over small
// command types (one file each), each with its own flags and help.
//
// The package is a thin front end. It parses arguments, calls the packages
// that own the behaviour (ir, expr, engine, guard, migrate, speckit) and
// formats their answers; it holds no business rules of its own, so that the
// CLI and the MCP server give the same answer to the same question.
//
// It must not be imported by any package of the module other than
// cmd/stratum.
package cli
