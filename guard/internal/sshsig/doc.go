// Package sshsig verifies OpenSSH "SSHSIG" detached signatures (the format
// written by `ssh-keygen -Y sign`) against a strict allowed-signers trust
// root. It is the authorization primitive of the guard: overrides, migrates
// and signed upgrade descriptors are accepted only with a signature from a
// key listed in the trust root (docs/guard-signatures.md).
//
// # Threat model
//
// The party asking for an override is usually an automated agent that
// controls the environment of the process doing the checking: PATH, HOME,
// the working directory, the ssh-agent socket. So:
//
//   - Verification is native Go code (crypto/ed25519, crypto/sha256,
//     crypto/sha512) and never runs `ssh-keygen -Y verify`: that binary is
//     found through PATH, and whoever controls PATH would control the answer.
//   - The wire format is parsed by a small strict reader of our own. Every
//     length is checked against the bytes that remain, truncation and trailing
//     bytes are rejections, and only Ed25519 keys and signatures are accepted,
//     so there is exactly one way to encode a valid signature and no algorithm
//     negotiation an attacker could steer.
//   - The namespace is compared before any cryptography. Each guard purpose
//     (override, migrate, descriptors) signs under its own namespace, so a
//     signature a human made for one purpose can never be spent on another,
//     and the caller learns the precise reason cheaply.
//   - The trust root is parsed all-or-nothing: a line this package does not
//     understand exactly (an OpenSSH option list such as namespaces= or
//     cert-authority, a non-Ed25519 key, a non-ASCII or control byte that
//     could hide text from a reviewer) makes the whole file unusable, rather
//     than being skipped or half-honoured. An empty trust root trusts nobody.
//
// Tests drive the real ssh-keygen to produce signatures; production code
// never executes it.
//
// Why this is not golang.org/x/crypto/ssh (which has no SSHSIG reader, and
// accepts key types and options the trust root must refuse):
// docs/decisions/0101.
//
// sshsig imports only the standard library and nothing of the module.
package sshsig
