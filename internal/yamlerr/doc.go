// Package yamlerr places a gopkg.in/yaml.v3 syntax error in the source
// text and says what would be right, for the two packages that report YAML
// errors to people and models: ir (the YAML_SYNTAX diagnostic of
// `stratum validate`) and migrate (the "unreadable" finding of `stratum
// migrate --check`).
//
// yaml.v3 reports a syntax error as text, "yaml: line N: problem", and the
// line is not always the one to fix: for parser errors (as opposed to
// scanner errors) N is zero-based, so it names the line before; and it is
// the line where the enclosing collection starts (the "context"), not the
// line of the offending token. Locate corrects the line, finds the
// offending token where it can (inside flow collections by scanning them;
// in block collections by asking yaml.v3 which prefix of the document first
// fails), and adds a hint for the mistakes specs are made of: an unquoted
// type such as string[] or a ${...} reference inside a flow mapping, a
// plain value containing ": ", a tab in the indentation, an unclosed quote
// or bracket. docs/spec-language.md ("Loading") lists them.
//
// The package is pure (no I/O) and imports only yaml.v3 and the standard
// library; it must not import ir or migrate, its two callers.
package yamlerr
