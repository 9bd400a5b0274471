package sshsig

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
)

// AllowedSigners is a parsed trust root: a strict subset of the OpenSSH
// allowed_signers format (docs/guard-signatures.md, "Trust-root format
// (strict)"). It is immutable once parsed.
type AllowedSigners struct {
	signers []Signer
}

// Signer is one trust-root line.
type Signer struct {
	// Principals are the names from the first field, in file order. They
	// only label the key in ledger entries; matching is by key alone.
	Principals []string
	Key        ed25519.PublicKey
	// Fingerprint is "SHA256:..." exactly as `ssh-keygen -l` prints it.
	Fingerprint string
}

// ParseAllowedSigners parses a trust root. Each non-blank line that does not
// start with '#' (after trimming) must be
//
//	principal[,principal...] ssh-ed25519 <base64 key> [comment...]
//
// Anything else is an error that makes the whole file unusable: an OpenSSH
// option list (namespaces=, cert-authority, valid-before=, ...), another key
// type, an empty or quoted or wildcard principal, a key blob that is not
// canonical base64 of an Ed25519 key. The file must be printable ASCII
// (plus tab and newline; CR only before a newline), comments included, so
// that what a reviewer sees in a diff is what is trusted.
//
// An empty or comment-only file parses to a trust root with Len() == 0,
// which Verify refuses.
func ParseAllowedSigners(data []byte) (*AllowedSigners, error) {
	if err := checkTrustRootBytes(data); err != nil {
		return nil, err
	}
	var signers []Signer
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := parseSignerLine(line)
		if err != nil {
			return nil, &Error{
				Reason:  ReasonMalformedTrustRoot,
				Line:    i + 1,
				Message: fmt.Sprintf("trust root line %d: %s; the whole trust root is unusable until this line is fixed", i+1, err),
			}
		}
		signers = append(signers, s)
	}
	return &AllowedSigners{signers: signers}, nil
}

// checkTrustRootBytes refuses non-ASCII and control bytes anywhere. A lone
// CR, an escape sequence or a homoglyph could make a line look like a comment
// (or like another key) to the person reviewing the change.
func checkTrustRootBytes(data []byte) error {
	line := 1
	col := 0
	for i, c := range data {
		col++
		switch {
		case c == '\n':
			line++
			col = 0
			continue
		case c == '\t' || c >= 0x20 && c < 0x7f:
			continue
		case c == '\r' && i+1 < len(data) && data[i+1] == '\n':
			continue
		}
		what := "a control character"
		if c >= 0x80 {
			what = "a non-ASCII byte"
		}
		return &Error{
			Reason: ReasonMalformedTrustRoot,
			Line:   line,
			Message: fmt.Sprintf("trust root line %d, column %d: %s (0x%02x); the trust root must be printable ASCII, comments included; the whole trust root is unusable until it is removed",
				line, col, what, c),
		}
	}
	return nil
}

func parseSignerLine(line string) (Signer, error) {
	fields := strings.Fields(line)
	if len(fields) < 3 {
		return Signer{}, fmt.Errorf("expected \"principal[,principal...] ssh-ed25519 <base64 key> [comment]\", found %d field(s)", len(fields))
	}
	principals, err := parsePrincipals(fields[0])
	if err != nil {
		return Signer{}, err
	}
	if fields[1] != keyTypeEd25519 {
		return Signer{}, fmt.Errorf("second field must be the key type ssh-ed25519, found %q (option lists such as namespaces=, cert-authority or valid-before= and other key types are not accepted)", fields[1])
	}
	blob, err := base64.StdEncoding.Strict().DecodeString(fields[2])
	if err != nil {
		return Signer{}, fmt.Errorf("key field is not pure base64 (%v); paste the public key line from the .pub file", err)
	}
	key, err := parseEd25519Key(blob)
	if err != nil {
		return Signer{}, fmt.Errorf("key field is not an Ed25519 public key: %w", err)
	}
	return Signer{Principals: principals, Key: key, Fingerprint: Fingerprint(key)}, nil
}

// parsePrincipals splits the comma list. Quoting and the pattern characters
// OpenSSH gives meaning to ('*', '?', '!') are refused: this package matches
// by key only, and a line must never mean something different here than to
// ssh-keygen.
func parsePrincipals(field string) ([]string, error) {
	parts := strings.Split(field, ",")
	for _, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("empty principal in %q", field)
		}
		if strings.ContainsAny(p, "\"*?!") {
			return nil, fmt.Errorf("principal %q contains a quote or a pattern character (\" * ? !), which are not accepted", p)
		}
	}
	return parts, nil
}

// Len is the number of signer lines; 0 for an empty or comment-only file.
func (a *AllowedSigners) Len() int {
	if a == nil {
		return 0
	}
	return len(a.signers)
}

// Signers returns a copy of the signer lines in file order.
func (a *AllowedSigners) Signers() []Signer {
	if a == nil {
		return nil
	}
	out := make([]Signer, len(a.signers))
	for i, s := range a.signers {
		out[i] = Signer{
			Principals:  append([]string(nil), s.Principals...),
			Key:         append(ed25519.PublicKey(nil), s.Key...),
			Fingerprint: s.Fingerprint,
		}
	}
	return out
}

// lookup returns the first signer whose key is byte-equal to key.
func (a *AllowedSigners) lookup(key ed25519.PublicKey) (Signer, bool) {
	for _, s := range a.signers {
		if bytes.Equal(s.Key, key) {
			return s, true
		}
	}
	return Signer{}, false
}

// Fingerprint is "SHA256:" + unpadded standard base64 of the SHA-256 of the
// key's wire blob (string "ssh-ed25519" + string key), the form `ssh-keygen
// -l` prints.
func Fingerprint(key ed25519.PublicKey) string {
	sum := sha256.Sum256(marshalEd25519Key(key))
	return "SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:])
}

func marshalEd25519Key(key ed25519.PublicKey) []byte {
	b := appendString(nil, []byte(keyTypeEd25519))
	return appendString(b, key)
}
