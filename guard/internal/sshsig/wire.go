package sshsig

import (
	"crypto/ed25519"
	"encoding/binary"
	"fmt"
)

// The SSH wire format (RFC 4251 §5): uint32 is 4 bytes big-endian, string
// is a uint32 length followed by that many bytes.

const (
	sigMagic       = "SSHSIG"
	sigVersion     = 1
	keyTypeEd25519 = "ssh-ed25519"
)

// wireReader consumes a byte slice front to back. Every read checks the
// remaining length first, so a hostile length can never index past the end.
type wireReader struct {
	rest []byte
}

func (r *wireReader) fixed(n int) ([]byte, bool) {
	if n < 0 || n > len(r.rest) {
		return nil, false
	}
	b := r.rest[:n]
	r.rest = r.rest[n:]
	return b, true
}

func (r *wireReader) uint32() (uint32, bool) {
	b, ok := r.fixed(4)
	if !ok {
		return 0, false
	}
	return binary.BigEndian.Uint32(b), true
}

func (r *wireReader) string() ([]byte, bool) {
	save := r.rest
	n, ok := r.uint32()
	if !ok {
		return nil, false
	}
	// Compare as uint64: a length near 2^32 must not wrap on any platform.
	if uint64(n) > uint64(len(r.rest)) {
		r.rest = save
		return nil, false
	}
	return r.fixed(int(n))
}

func (r *wireReader) done() bool { return len(r.rest) == 0 }

func appendString(dst, s []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(s)))
	return append(dst, s...)
}

// parsedSignature is a structurally valid SSHSIG blob. Nothing in it has
// been checked against a namespace, a trust root or the message yet.
type parsedSignature struct {
	key       ed25519.PublicKey
	namespace string
	hashAlg   string
	sig       []byte
}

// parseBlob reads a decoded SSHSIG blob (docs/guard-signatures.md, "The
// signature blob"). The outer
// structure is read completely (so trailing bytes and truncation are found
// whatever the key type) before the key and signature are looked at.
func parseBlob(blob []byte) (*parsedSignature, error) {
	r := wireReader{rest: blob}
	magic, ok := r.fixed(len(sigMagic))
	if !ok || string(magic) != sigMagic {
		return nil, newError(ReasonMalformedBlob,
			"decoded signature does not start with \"SSHSIG\": it is not an SSH signature; pass the .sig file written by ssh-keygen -Y sign")
	}
	version, ok := r.uint32()
	if !ok {
		return nil, truncated("version")
	}
	if version != sigVersion {
		return nil, newError(ReasonUnsupportedVersion,
			fmt.Sprintf("SSHSIG version %d is not supported (only version 1); sign with a current ssh-keygen -Y sign", version))
	}
	var keyBlob, namespace, reserved, hashAlg, sigBlob []byte
	for _, f := range []struct {
		name string
		dst  *[]byte
	}{
		{"public key", &keyBlob},
		{"namespace", &namespace},
		{"reserved", &reserved},
		{"hash algorithm", &hashAlg},
		{"signature", &sigBlob},
	} {
		v, ok := r.string()
		if !ok {
			return nil, truncated(f.name)
		}
		*f.dst = v
	}
	if !r.done() {
		return nil, newError(ReasonMalformedBlob,
			fmt.Sprintf("%d unexpected bytes after the signature; the signature was altered or concatenated with other data", len(r.rest)))
	}
	if len(reserved) != 0 {
		return nil, newError(ReasonMalformedBlob,
			fmt.Sprintf("reserved field must be empty but holds %d bytes; this is not a signature made by ssh-keygen -Y sign", len(reserved)))
	}
	key, err := parseEd25519Key(keyBlob)
	if err != nil {
		return nil, err
	}
	sig, err := parseEd25519Signature(sigBlob)
	if err != nil {
		return nil, err
	}
	return &parsedSignature{key: key, namespace: string(namespace), hashAlg: string(hashAlg), sig: sig}, nil
}

func truncated(field string) *Error {
	return newError(ReasonMalformedBlob,
		"signature is truncated or corrupt (cannot read the "+field+" field); copy the whole .sig file again")
}

// parseEd25519Key reads the public-key blob: string "ssh-ed25519" then the
// 32-byte key as a string, nothing after.
func parseEd25519Key(blob []byte) (ed25519.PublicKey, error) {
	r := wireReader{rest: blob}
	keyType, ok := r.string()
	if !ok {
		return nil, newError(ReasonMalformedBlob, "public key inside the signature is truncated or corrupt")
	}
	if string(keyType) != keyTypeEd25519 {
		return nil, unsupportedKey(string(keyType))
	}
	raw, ok := r.string()
	if !ok || len(raw) != ed25519.PublicKeySize || !r.done() {
		return nil, newError(ReasonMalformedBlob,
			"Ed25519 public key inside the signature is malformed (must be exactly 32 bytes with nothing after)")
	}
	return ed25519.PublicKey(raw), nil
}

// parseEd25519Signature reads the signature blob: string "ssh-ed25519" then
// the 64-byte signature as a string, nothing after.
func parseEd25519Signature(blob []byte) ([]byte, error) {
	r := wireReader{rest: blob}
	sigType, ok := r.string()
	if !ok {
		return nil, newError(ReasonMalformedBlob, "signature value is truncated or corrupt")
	}
	if string(sigType) != keyTypeEd25519 {
		return nil, newError(ReasonMalformedBlob,
			fmt.Sprintf("signature type %s does not match the Ed25519 key that claims to have made it", quoteForMessage(string(sigType))))
	}
	sig, ok := r.string()
	if !ok || len(sig) != ed25519.SignatureSize || !r.done() {
		return nil, newError(ReasonMalformedBlob,
			"Ed25519 signature value is malformed (must be exactly 64 bytes with nothing after)")
	}
	return sig, nil
}

func unsupportedKey(keyType string) *Error {
	return newError(ReasonUnsupportedKeyType,
		fmt.Sprintf("key type %s is not accepted: only Ed25519 keys may sign (create one with ssh-keygen -t ed25519 and list it in the trust root)", quoteForMessage(keyType)))
}
