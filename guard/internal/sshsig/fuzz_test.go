package sshsig

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

var knownReasons = map[Reason]bool{
	ReasonInvalidNamespace: true, ReasonEmptyTrustRoot: true, ReasonMalformedArmor: true,
	ReasonMalformedBlob: true, ReasonUnsupportedVersion: true, ReasonUnsupportedKeyType: true,
	ReasonWrongNamespace: true, ReasonUnsupportedHash: true, ReasonNotAllowedSigner: true,
	ReasonBadSignature: true, ReasonMalformedTrustRoot: true,
}

// FuzzVerify feeds arbitrary text to Verify against the committed trust
// root. Input without an armor line is treated as a raw blob and armored
// here, so the fuzzer explores the wire format, not only base64 errors.
// Verify must never panic, every refusal must be a typed *Error, and an
// acceptance must name the fixture signer.
func FuzzVerify(f *testing.F) {
	trust, err := ParseAllowedSigners(readFixture(f, "allowed_signers"))
	if err != nil {
		f.Fatal(err)
	}
	payload := readFixture(f, "payload.json")
	real := string(readFixture(f, "payload.json.sig"))
	f.Add(real, payload, fixtureNamespace)
	f.Add(string(readFixture(f, "payload.json.sha256.sig")), payload, fixtureNamespace)
	f.Add(string(readFixture(f, "payload.json.rsa.sig")), payload, fixtureNamespace)
	f.Add(real, payload, "stratum-guard-migrate")
	f.Add(real+real, payload, fixtureNamespace)
	blob, err := decodeArmor(real)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(blob), payload, fixtureNamespace)
	f.Add(string(blob[:len(blob)/2]), payload, fixtureNamespace)
	f.Add(string(append(append([]byte{}, blob...), 0, 0, 0, 1)), payload, fixtureNamespace)
	s := craft(testKey(3), fixtureNamespace, "sha256", payload)
	s.reserved = "r"
	f.Add(string(s.bytes()), payload, fixtureNamespace)
	f.Add("", []byte{}, "")

	fp := trust.Signers()[0].Fingerprint
	f.Fuzz(func(t *testing.T, text string, message []byte, namespace string) {
		if !strings.Contains(text, armorBegin) {
			text = armorBlob([]byte(text))
		}
		got, err := Verify(text, message, namespace, trust)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || !knownReasons[e.Reason] || e.Message == "" {
				t.Fatalf("untyped or unknown refusal: %#v", err)
			}
			return
		}
		if got.Principal != fixturePrincipal || got.Fingerprint != fp {
			t.Fatalf("accepted with an unexpected signer %+v", got)
		}
		if namespace != fixtureNamespace {
			t.Fatalf("accepted for namespace %q, the fixture was signed for %q", namespace, fixtureNamespace)
		}
	})
}

// FuzzParseAllowedSigners: never panics; a refusal names a line; an
// accepted file is printable ASCII and every signer re-renders to a line
// that parses back to the same signer.
func FuzzParseAllowedSigners(f *testing.F) {
	f.Add(readFixture(f, "allowed_signers"))
	b1 := base64.StdEncoding.EncodeToString(keyBlobOf(pubOf(testKey(1))))
	for _, seed := range []string{
		"",
		"# only a comment\n\n",
		"alice,bob ssh-ed25519 " + b1 + " comment words\r\n",
		"alice namespaces=\"x\" ssh-ed25519 " + b1,
		"alice cert-authority ssh-ed25519 " + b1,
		"alice,,bob ssh-ed25519 " + b1,
		"alice ssh-rsa " + b1,
		"alice ssh-ed25519 " + b1 + " caf\xc3\xa9",
		"alice ssh-ed25519 " + b1 + "\r# hidden",
		"alice ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA==",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := ParseAllowedSigners(data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Reason != ReasonMalformedTrustRoot || e.Line < 1 || e.Message == "" {
				t.Fatalf("refusal without reason or line: %#v", err)
			}
			return
		}
		for _, c := range data {
			if c >= 0x80 {
				t.Fatalf("accepted a non-ASCII byte %#x", c)
			}
		}
		var lines []string
		for _, s := range a.Signers() {
			if len(s.Principals) == 0 || len(s.Key) != ed25519.PublicKeySize || s.Fingerprint != Fingerprint(s.Key) {
				t.Fatalf("inconsistent signer %+v", s)
			}
			for _, p := range s.Principals {
				if p == "" || strings.ContainsAny(p, ", \t\r\n") {
					t.Fatalf("bad principal %q", p)
				}
			}
			lines = append(lines, strings.Join(s.Principals, ",")+" ssh-ed25519 "+base64.StdEncoding.EncodeToString(keyBlobOf(s.Key)))
		}
		again, err := ParseAllowedSigners([]byte(strings.Join(lines, "\n")))
		if err != nil {
			t.Fatalf("re-rendered trust root refused: %v", err)
		}
		if again.Len() != a.Len() {
			t.Fatalf("round trip changed the signer count %d -> %d", a.Len(), again.Len())
		}
		for i, s := range again.Signers() {
			orig := a.Signers()[i]
			if !bytes.Equal(s.Key, orig.Key) || strings.Join(s.Principals, ",") != strings.Join(orig.Principals, ",") {
				t.Fatalf("round trip changed signer %d", i)
			}
		}
	})
}
