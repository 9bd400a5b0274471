package sshsig

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
)

// Verified identifies who signed: the first principal of the first
// trust-root line holding the signing key, and that key's fingerprint.
type Verified struct {
	Principal   string
	Fingerprint string
}

// Verify checks an armored SSH signature (the text of a .sig file written by
// `ssh-keygen -Y sign -n <namespace>`) over message against trust, following
// docs/guard-signatures.md, "Signature checks, in order": parse, namespace,
// hash algorithm, signer in the trust root, then the Ed25519 check over the
// SSHSIG signed data (which covers the hash of message, not message itself).
//
// Every refusal is an *Error whose Reason says which check failed.
func Verify(armored string, message []byte, namespace string, trust *AllowedSigners) (Verified, error) {
	if namespace == "" {
		return Verified{}, newError(ReasonInvalidNamespace, "no namespace was given to verify against (caller bug)")
	}
	if trust.Len() == 0 {
		return Verified{}, newError(ReasonEmptyTrustRoot,
			"the trust root lists no signer, so nothing can be authorized; an operator must append \"<name> ssh-ed25519 <key>\" to the allowed-signers file and commit it")
	}
	blob, err := decodeArmor(armored)
	if err != nil {
		return Verified{}, err
	}
	sig, err := parseBlob(blob)
	if err != nil {
		return Verified{}, err
	}
	// Namespace first: a signature made for another purpose is refused
	// before any key lookup or cryptography.
	if sig.namespace != namespace {
		return Verified{}, newError(ReasonWrongNamespace,
			fmt.Sprintf("signature was made for namespace %s but this action requires %q; sign again with: ssh-keygen -Y sign -f <key> -n %s <file>",
				quoteForMessage(sig.namespace), namespace, namespace))
	}
	digest, ok := hashMessage(sig.hashAlg, message)
	if !ok {
		return Verified{}, newError(ReasonUnsupportedHash,
			fmt.Sprintf("hash algorithm %s is not supported (only sha512, the ssh-keygen default, and sha256); sign again without -O hashalg",
				quoteForMessage(sig.hashAlg)))
	}
	signer, ok := trust.lookup(sig.key)
	if !ok {
		return Verified{}, newError(ReasonNotAllowedSigner,
			fmt.Sprintf("signing key %s is not in the trust root; sign with a key listed there (or an operator adds \"<name> ssh-ed25519 <key>\" to the allowed-signers file and commits it)",
				Fingerprint(sig.key)))
	}
	if !ed25519.Verify(sig.key, signedData(sig.namespace, sig.hashAlg, digest), sig.sig) {
		return Verified{}, newError(ReasonBadSignature,
			fmt.Sprintf("signature by %s (%s) does not match the message: the payload changed since it was signed (for example the ledger head moved) or the signature was altered; fetch the current payload and sign it again",
				signer.Principals[0], signer.Fingerprint))
	}
	return Verified{Principal: signer.Principals[0], Fingerprint: signer.Fingerprint}, nil
}

func hashMessage(alg string, message []byte) ([]byte, bool) {
	switch alg {
	case "sha512":
		sum := sha512.Sum512(message)
		return sum[:], true
	case "sha256":
		sum := sha256.Sum256(message)
		return sum[:], true
	}
	return nil, false
}

// signedData is what the Ed25519 signature covers: the magic preamble, then
// namespace, reserved (empty), hash algorithm and the message digest, each
// as an SSH string.
func signedData(namespace, hashAlg string, digest []byte) []byte {
	b := []byte(sigMagic)
	b = appendString(b, []byte(namespace))
	b = appendString(b, nil)
	b = appendString(b, []byte(hashAlg))
	return appendString(b, digest)
}
