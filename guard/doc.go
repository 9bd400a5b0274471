// Package guard gives external trackers evidence-gated, hash-chained state
// machines (docs/guard.md).
//
// A tracker registers a resource's lifecycle — a graph of states, per-edge
// predicates, terminal states, stakes — and afterwards moves the resource
// only along declared edges whose predicates hold. Deterministic predicates
// are checked by the server itself against real files, git objects, command
// exit codes and the resource's own ledger (guard/internal/evidence);
// verified/judged predicates go to a [judge.Judge], and with none configured
// the move is refused, never applied. Every attempt, applied or refused, is
// one line of a hash-chained ledger (guard/internal/ledger), so tampering
// with history or policy is detected. Policies change only by an additive
// upgrade, a signed upgrade descriptor or a signed migrate; a signed
// override moves one declared edge without its predicates. Signatures are
// SSH signatures verified natively (guard/internal/sshsig) against the trust
// root guard-signers.allowed, embedded into the binary at build time.
//
// The exported API is shaped for the two front ends: each MCP tool and each
// `stratum guard` action is one method call on [*Guard] (such as
// [Guard.Transition]) with a request struct whose JSON tags are the wire
// names, returning a result struct or an [*Error] whose [Code] is the wire
// error_type ([Envelope] gives the wire form; both front ends read a
// request with [DecodeRequest]).
//
// Storage is one directory per resource under the store root, private to
// its owner (0700/0600); mutations hold an in-process queue and a flock on
// the resource, write with fsync, and several processes may share a store.
// registry.json is sealed (seal.go: the reference's policy checksum plus a
// seal over the whole record) and records the ledger's head, so that an
// edited registry and a ledger cut short, deleted or appended to are
// detected; a mutation announces its entry, appends it, then records it as
// the head (commit.go), so an error answer always means nothing was
// recorded. [Guard.Verify] prints a head to keep elsewhere and checks one kept
// earlier (docs/guard.md, "What each check catches").
//
// File, git and command evidence is confined to a workspace root that must
// lie inside the roots the person who started Stratum allowed
// ([Options.AllowedRoots], jail.go), checked at registration and at every
// transition.
//
// guard imports its own internal packages (canon, evidence, ledger,
// sshsig), judge and internal/atomicfile of the module, and must not import
// engine, ir, store, mcp or cli.
package guard
