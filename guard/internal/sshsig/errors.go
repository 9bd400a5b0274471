package sshsig

import "strconv"

// Reason classifies why a signature or a trust root was refused. A Reason
// is itself an error so callers can write errors.Is(err, ReasonBadSignature);
// errors.As with *Error gives the Reason and the operator-facing message.
type Reason string

// The reasons, in the order Verify checks them (docs/guard-signatures.md,
// "Signature checks, in order").
const (
	// ReasonInvalidNamespace: the caller asked for an empty namespace (a
	// programming error: every guard purpose has its own namespace).
	ReasonInvalidNamespace Reason = "invalid_namespace"
	// ReasonEmptyTrustRoot: the trust root lists no signer, so nothing can
	// be authorized.
	ReasonEmptyTrustRoot Reason = "empty_trust_root"
	// ReasonMalformedArmor: the BEGIN/END SSH SIGNATURE block is missing,
	// duplicated, or its body is not canonical base64.
	ReasonMalformedArmor Reason = "malformed_armor"
	// ReasonMalformedBlob: the decoded SSHSIG structure is truncated, has
	// trailing bytes, a non-empty reserved field or a wrong-sized key or
	// signature.
	ReasonMalformedBlob Reason = "malformed_blob"
	// ReasonUnsupportedVersion: the SSHSIG version is not 1.
	ReasonUnsupportedVersion Reason = "unsupported_version"
	// ReasonUnsupportedKeyType: the signing key is not Ed25519 (RSA,
	// ECDSA, security-key and certificate keys are all refused).
	ReasonUnsupportedKeyType Reason = "unsupported_key_type"
	// ReasonWrongNamespace: the signature was made for another purpose.
	ReasonWrongNamespace Reason = "wrong_namespace"
	// ReasonUnsupportedHash: the hash algorithm is not sha256 or sha512.
	ReasonUnsupportedHash Reason = "unsupported_hash"
	// ReasonNotAllowedSigner: the signing key is not in the trust root.
	ReasonNotAllowedSigner Reason = "not_allowed_signer"
	// ReasonBadSignature: the Ed25519 signature does not match the message.
	ReasonBadSignature Reason = "bad_signature"
	// ReasonMalformedTrustRoot: the allowed-signers file has a line this
	// package does not accept; the whole file is unusable.
	ReasonMalformedTrustRoot Reason = "malformed_trust_root"
)

// Error implements error so that a bare Reason can be a target for errors.Is.
func (r Reason) Error() string { return "sshsig: " + string(r) }

// Error is the error returned by Verify and ParseAllowedSigners.
type Error struct {
	Reason Reason
	// Line is the 1-based trust-root line for ReasonMalformedTrustRoot, else 0.
	Line int
	// Message says what is wrong and what an operator can do about it.
	Message string
}

func (e *Error) Error() string { return "sshsig: " + e.Message }

// Is reports whether target is this error's Reason (or an *Error with the
// same Reason), so errors.Is(err, ReasonWrongNamespace) works.
func (e *Error) Is(target error) bool {
	switch t := target.(type) {
	case Reason:
		return t == e.Reason
	case *Error:
		return t != nil && t.Reason == e.Reason
	}
	return false
}

func newError(reason Reason, message string) *Error {
	return &Error{Reason: reason, Message: message}
}

// quoteForMessage renders attacker-controlled text (a namespace or type name
// from a signature) safely for a log line: Go-quoted, and cut short so a huge
// field cannot flood the message.
func quoteForMessage(s string) string {
	const maxShown = 64
	if len(s) > maxShown {
		return strconv.Quote(s[:maxShown]) + "..."
	}
	return strconv.Quote(s)
}
