// Package expr implements Stratum's v1 restricted expression language, the
// language of ensure predicates, `when` conditions, `set` values and
// `iterate.until` (docs/expressions.md), and the JSON value model shared by
// the validator and the engine.
//
// Values are the decoded JSON forms: nil, bool, float64, string, []any and
// *Object (an object with JavaScript's property order, which str(),
// rendering and JSON output observe). [DecodeJSON] produces them;
// [EncodeJSON] and [Stringify] write them back exactly as JavaScript's
// JSON.stringify and String() do; [Equal] is the language's deep equality,
// for callers that compare values as == does.
//
// [Compile] parses an expression once (enforcing the nesting and node
// limits while parsing, so hostile input is refused before it can build a
// deep tree); a [*Program] then evaluates any number of times,
// concurrently, with [Program.Eval], [Program.EvalContext] or
// [Program.EvalPredicate] against [Bindings] (result, input, item, prev;
// absent, null and "bound without a value" are distinct). Every failure is
// an [*Error] carrying one of the six codes of the language.
//
// Work is bounded by counting, never by the clock: each evaluation has a
// work budget ([DefaultBudget] units of regex matching, comparisons,
// string building and file reading), and a [Budget] passed in
// [EvalOptions] is shared by several evaluations, so that the ensures of
// one step are bounded in total rather than each on its own.
//
// The file functions are the only I/O. They resolve a path inside the
// workspace root and then open it through an [os.Root] of that root, which
// refuses, at open time and at every component, anything that leads out of
// it: a directory swapped for a symlink between the two cannot redirect a
// read. [Program.EvalPredicateTrace] reports what each file check looked up
// ([FileCheck]), for failure texts. The regex dialect of matches() lives in
// internal/jsregex.
//
// expr is pure: it knows nothing of specs or runs and imports nothing of the
// module outside its own internal packages.
package expr
