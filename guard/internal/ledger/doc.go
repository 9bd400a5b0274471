// Package ledger reads, verifies and appends a guard resource's
// hash-chained ledger (docs/guard.md, "The ledger"): one compact canonical JSON
// line per entry, each entry's digest covering its own content and the
// previous entry's digest.
//
// Verification works on the stored text, never on re-serialised values:
// the `{"entry_digest":"<hex>",` prefix of a line is replaced by `{` to
// recover the exact bytes that were hashed, so lines written by other
// engines (which may spell numbers differently) verify as written.
//
// A damaged last line without its newline is a torn write: Parse drops it
// and Repair truncates it away (keeping a copy) before the next append, so
// it can never become interior damage. A damaged line anywhere else, and a
// damaged last line that ends with its newline (an append writes line and
// newline in one write, so no crash leaves that), is ErrCorrupt.
//
// ledger imports guard/internal/canon and internal/atomicfile of the
// module, nothing else.
package ledger
