// Package canon writes the canonical JSON form that every guard hash is taken
// over: checksums, payload digests, ledger entry digests and the payloads an
// operator signs (docs/guard.md, "Canonical JSON").
//
// The form is byte-identical to Python's
// json.dumps(v, sort_keys=True, separators=(",", ":")) with ensure_ascii:
// keys sorted by code point, no whitespace, every non-ASCII, control or DEL
// character written as \u escapes of its UTF-16 code units (lowercase hex),
// and only integers within ±(2^53-1) as numbers. Anything else is an error,
// never a silently different byte string.
//
// The store's event chain and the engine's revision digest have canonical
// forms of their own; docs/decisions/0102 says why none of the three is
// shared.
//
// canon imports nothing of the module.
package canon
