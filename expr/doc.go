// Package expr implements Stratum's v1 restricted expression language, the
// language of ensure predicates, `when` conditions, `set` values and
// `iterate.until` (spec/ir.md section 11), and the JSON value model shared by
// the validator and the engine.
//
// Values are the decoded JSON forms: nil, bool, float64, string, []any and
// *Object (an object that keeps its key order, which str() and rendering
// observe). DecodeJSON produces them; Object's MarshalJSON writes them back
// in the same order.
//
// expr is pure: it knows nothing of specs or runs and imports nothing of the
// module. Its only I/O is the file functions, jailed to a workspace root.
package expr
