// Package migrate implements `stratum migrate --check`: a report-only
// classifier of legacy v0.x Stratum specs (IR 0.1, 0.2 and 0.3).
//
// [Check] reads one YAML document and lists every legacy construct it uses,
// each with a status (supported, diagnostic or unsupported), the v1
// construct that replaces it, a short note, and every place it was found
// (a dotted path plus line and column). It is a usage scanner, not a
// validator: it never checks that referenced functions, contracts or steps
// exist, and it never writes, translates or emits YAML. Malformed input is
// not an error: it becomes an "unreadable" finding, so any readable file has
// a report.
//
// The package owns the catalogue of legacy constructs and the two report
// formats (text and JSON: [Report.WriteText], [Report.WriteJSON]). It is pure:
// it does no I/O of its own and imports only expr (for JavaScript's
// number-to-text conversion of a numeric version or key) and internal/yamlerr
// (which places a YAML error on the line to fix, as ir does) from the module.
// It must not import ir (a legacy spec is not a v1 spec), engine, store, cli or
// mcp.
package migrate
