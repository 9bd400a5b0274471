// Package expr implements Stratum's v1 restricted expression language, the
// language of ensure predicates, `when` conditions, `set` values and
// `iterate.until` (spec/ir.md section 11; docs/expressions.md for authors),
// and the JSON value model shared by the validator and the engine.
//
// Values are the decoded JSON forms: nil, bool, float64, string, []any and
// *Object (an object with JavaScript's property order, which str(),
// rendering and JSON output observe). DecodeJSON produces them; EncodeJSON
// and Stringify write them back exactly as JavaScript's JSON.stringify and
// String() do.
//
// Compile parses an expression once (enforcing the nesting and node limits
// while parsing, so hostile input is refused before it can build a deep
// tree); a *Program then evaluates any number of times, concurrently, with
// Eval, EvalContext or EvalPredicate against Bindings (result, input, item,
// prev; absent, null and "bound without a value" are distinct). Every
// failure is an *Error carrying one of the six codes of the spec.
//
// The file functions are the only I/O; they and the engine's file ensures
// share one jail (ResolveInWorkspace, FileExists, FileContains). The regex
// dialect of matches() lives in internal/jsregex.
//
// expr is pure: it knows nothing of specs or runs and imports nothing of the
// module outside its own internal packages.
package expr
