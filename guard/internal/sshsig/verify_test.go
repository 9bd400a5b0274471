package sshsig

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const overridePayload = `{"action":"override","from_state":"review","ledger_head":"","rationale":"manual ship","resource_id":"compose:FEAT-1","to_state":"done"}`

func TestVerifyRealSignatures(t *testing.T) {
	dir := t.TempDir()
	alice := generateKey(t, dir, "alice", "ed25519")
	bob := generateKey(t, dir, "bob", "ed25519")
	trust := mustTrust(t,
		"# operators",
		"bob,robert "+bob.pubLine,
		"alice,al "+alice.pubLine,
		"alice-again "+alice.pubLine, // a later line with the same key never wins
	)
	tests := []struct {
		name      string
		key       keygenKey
		wantPrinc string
		message   []byte
		opts      []string
	}{
		{"sha512 default", alice, "alice", []byte(overridePayload), nil},
		{"sha256", alice, "alice", []byte(overridePayload), []string{"hashalg=sha256"}},
		{"explicit sha512", bob, "bob", []byte(overridePayload), []string{"hashalg=sha512"}},
		{"empty message", bob, "bob", []byte{}, nil},
		{"binary message", alice, "alice", []byte("\x00\xff\nline\r\n\x00"), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sig := signWithKeygen(t, dir, tc.key, "stratum-guard-override", tc.message, tc.opts...)
			got, err := Verify(sig, tc.message, "stratum-guard-override", trust)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if got.Principal != tc.wantPrinc {
				t.Errorf("principal = %q, want %q", got.Principal, tc.wantPrinc)
			}
			if want := keygenFingerprint(t, dir, tc.key.pubLine); got.Fingerprint != want {
				t.Errorf("fingerprint = %q, ssh-keygen -l says %q", got.Fingerprint, want)
			}
		})
	}
}

func TestVerifyRefusesRealSignatures(t *testing.T) {
	dir := t.TempDir()
	alice := generateKey(t, dir, "alice", "ed25519")
	mallory := generateKey(t, dir, "mallory", "ed25519")
	rsa := generateKey(t, dir, "rsa", "rsa", "-b", "2048")
	ecdsa := generateKey(t, dir, "ecdsa", "ecdsa")
	trust := mustTrust(t, "alice "+alice.pubLine)
	message := []byte(overridePayload)
	good := signWithKeygen(t, dir, alice, "stratum-guard-override", message)

	tests := []struct {
		name      string
		sig       string
		message   []byte
		namespace string
		trust     *AllowedSigners
		want      Reason
	}{
		{"wrong namespace", good, message, "stratum-guard-migrate", trust, ReasonWrongNamespace},
		{"namespace is a prefix", signWithKeygen(t, dir, alice, "stratum-guard", message), message, "stratum-guard-override", trust, ReasonWrongNamespace},
		{"key not in trust root", signWithKeygen(t, dir, mallory, "stratum-guard-override", message), message, "stratum-guard-override", trust, ReasonNotAllowedSigner},
		{"tampered message", good, []byte(strings.Replace(overridePayload, "done", "dome", 1)), "stratum-guard-override", trust, ReasonBadSignature},
		{"message with trailing newline", good, append(append([]byte{}, message...), '\n'), "stratum-guard-override", trust, ReasonBadSignature},
		{"rsa key", signWithKeygen(t, dir, rsa, "stratum-guard-override", message), message, "stratum-guard-override", trust, ReasonUnsupportedKeyType},
		{"ecdsa key", signWithKeygen(t, dir, ecdsa, "stratum-guard-override", message), message, "stratum-guard-override", trust, ReasonUnsupportedKeyType},
		{"empty trust root", good, message, "stratum-guard-override", mustTrust(t, "# nobody yet"), ReasonEmptyTrustRoot},
		{"nil trust root", good, message, "stratum-guard-override", nil, ReasonEmptyTrustRoot},
		{"empty namespace argument", good, message, "", trust, ReasonInvalidNamespace},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Verify(tc.sig, tc.message, tc.namespace, tc.trust)
			expectReason(t, err, tc.want)
		})
	}

	// The same signature still verifies: the refusals above did not depend
	// on a broken fixture.
	if _, err := Verify(good, message, "stratum-guard-override", trust); err != nil {
		t.Fatalf("control: %v", err)
	}
}

// TestCraftedSignaturesAgreeWithSSHKeygen proves the test-only crafter (used
// for the single-field mutations below) produces what OpenSSH accepts, so
// the refusal tests start from genuinely valid signatures.
func TestCraftedSignaturesAgreeWithSSHKeygen(t *testing.T) {
	dir := t.TempDir()
	priv := testKey(7)
	line := trustLineFor("carol", pubOf(priv))
	signersFile := filepath.Join(dir, "allowed")
	if err := os.WriteFile(signersFile, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	trust := mustTrust(t, line)
	for _, alg := range []string{"sha512", "sha256"} {
		t.Run(alg, func(t *testing.T) {
			message := []byte("descriptor bytes\n")
			armored := craft(priv, "stratum-guard-descriptors", alg, message).armored()
			sigFile := filepath.Join(dir, alg+".sig")
			if err := os.WriteFile(sigFile, []byte(armored), 0o600); err != nil {
				t.Fatal(err)
			}
			runKeygen(t, dir, message, "-Y", "verify", "-f", signersFile, "-I", "carol", "-n", "stratum-guard-descriptors", "-s", sigFile)
			got, err := Verify(armored, message, "stratum-guard-descriptors", trust)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if got.Principal != "carol" || got.Fingerprint != Fingerprint(pubOf(priv)) {
				t.Fatalf("got %+v", got)
			}
		})
	}
}

func TestVerifyCraftedRefusals(t *testing.T) {
	alice, mallory := testKey(1), testKey(2)
	trust := mustTrust(t, trustLineFor("alice", pubOf(alice)))
	const ns = "stratum-guard-migrate"
	message := []byte(`{"action":"migrate"}`)
	valid := func() blobSpec { return craft(alice, ns, "sha512", message) }
	with := func(mutate func(*blobSpec)) string {
		s := valid()
		mutate(&s)
		return s.armored()
	}
	badSig := wireString([]byte("ssh-ed25519"), make([]byte, 64))

	tests := []struct {
		name      string
		armored   string
		namespace string
		want      Reason
	}{
		{"wrong magic", with(func(s *blobSpec) { s.magic = "SSHSIH" }), ns, ReasonMalformedBlob},
		{"version 0", with(func(s *blobSpec) { s.version = 0 }), ns, ReasonUnsupportedVersion},
		{"version 2", with(func(s *blobSpec) { s.version = 2 }), ns, ReasonUnsupportedVersion},
		{"reserved non-empty", with(func(s *blobSpec) { s.reserved = "x" }), ns, ReasonMalformedBlob},
		{"trailing byte", with(func(s *blobSpec) { s.trailing = []byte{0} }), ns, ReasonMalformedBlob},
		{"trailing empty string", with(func(s *blobSpec) { s.trailing = []byte{0, 0, 0, 0} }), ns, ReasonMalformedBlob},
		{"trailing bytes in key blob", with(func(s *blobSpec) { s.keyBlob = append(s.keyBlob, 0) }), ns, ReasonMalformedBlob},
		{"short key", with(func(s *blobSpec) { s.keyBlob = wireString([]byte("ssh-ed25519"), pubOf(alice)[:31]) }), ns, ReasonMalformedBlob},
		{"long key", with(func(s *blobSpec) { s.keyBlob = wireString([]byte("ssh-ed25519"), append(pubOf(alice), 0)) }), ns, ReasonMalformedBlob},
		{"empty key blob", with(func(s *blobSpec) { s.keyBlob = nil }), ns, ReasonMalformedBlob},
		{"security key type", with(func(s *blobSpec) {
			s.keyBlob = wireString([]byte("sk-ssh-ed25519@openssh.com"), pubOf(alice), []byte("ssh:"))
		}), ns, ReasonUnsupportedKeyType},
		{"certificate key type", with(func(s *blobSpec) {
			s.keyBlob = wireString([]byte("ssh-ed25519-cert-v01@openssh.com"), []byte("nonce"), pubOf(alice))
		}), ns, ReasonUnsupportedKeyType},
		{"signature type mismatch", with(func(s *blobSpec) {
			s.sigBlob = wireString([]byte("rsa-sha2-512"), make([]byte, 64))
		}), ns, ReasonMalformedBlob},
		{"short signature", with(func(s *blobSpec) { s.sigBlob = wireString([]byte("ssh-ed25519"), make([]byte, 63)) }), ns, ReasonMalformedBlob},
		{"trailing bytes in signature blob", with(func(s *blobSpec) { s.sigBlob = append(s.sigBlob, 1) }), ns, ReasonMalformedBlob},
		{"unsupported hash md5", with(func(s *blobSpec) { s.hashAlg = "md5" }), ns, ReasonUnsupportedHash},
		{"hash name is case-sensitive", with(func(s *blobSpec) { s.hashAlg = "SHA512" }), ns, ReasonUnsupportedHash},
		{"empty hash name", with(func(s *blobSpec) { s.hashAlg = "" }), ns, ReasonUnsupportedHash},
		{"hash name swapped after signing", with(func(s *blobSpec) { s.hashAlg = "sha256" }), ns, ReasonBadSignature},
		{"namespace swapped after signing", with(func(s *blobSpec) { s.namespace = "stratum-guard-override" }), "stratum-guard-override", ReasonBadSignature},
		{"empty embedded namespace", with(func(s *blobSpec) { s.namespace = "" }), ns, ReasonWrongNamespace},
		{"not allowed signer", craft(mallory, ns, "sha512", message).armored(), ns, ReasonNotAllowedSigner},
		{"zero signature", with(func(s *blobSpec) { s.sigBlob = badSig }), ns, ReasonBadSignature},

		// Check order (docs/guard-signatures.md): namespace, then hash, then
		// signer, then crypto.
		{"order: wrong namespace beats unknown signer and bad signature", func() string {
			s := craft(mallory, "other", "md5", message)
			s.sigBlob = badSig
			return s.armored()
		}(), ns, ReasonWrongNamespace},
		{"order: unsupported hash beats unknown signer", craft(mallory, ns, "sha1", message).armored(), ns, ReasonUnsupportedHash},
		{"order: unknown signer beats bad signature", func() string {
			s := craft(mallory, ns, "sha512", message)
			s.sigBlob = badSig
			return s.armored()
		}(), ns, ReasonNotAllowedSigner},
		{"order: parse beats namespace", func() string {
			s := craft(alice, "other", "sha512", message)
			s.trailing = []byte{9}
			return s.armored()
		}(), ns, ReasonMalformedBlob},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Verify(tc.armored, message, tc.namespace, trust)
			expectReason(t, err, tc.want)
		})
	}
	if _, err := Verify(valid().armored(), message, ns, trust); err != nil {
		t.Fatalf("control: %v", err)
	}
}

func TestVerifyTruncatedAtEveryLength(t *testing.T) {
	alice := testKey(1)
	trust := mustTrust(t, trustLineFor("alice", pubOf(alice)))
	message := []byte("payload")
	blob := craft(alice, "ns", "sha512", message).bytes()
	for n := 0; n < len(blob); n++ {
		_, err := Verify(armorBlob(blob[:n]), message, "ns", trust)
		want := ReasonMalformedBlob
		if n == 0 {
			want = ReasonMalformedArmor // an empty body
		}
		if err == nil {
			t.Fatalf("blob truncated to %d of %d bytes verified", n, len(blob))
		}
		if got := reasonOf(t, err); got != want {
			t.Fatalf("truncated to %d bytes: reason %s, want %s (%v)", n, got, want, err)
		}
	}
	if _, err := Verify(armorBlob(blob), message, "ns", trust); err != nil {
		t.Fatalf("control: %v", err)
	}
}

// TestVerifyEveryByteFlipRefused flips each byte of a valid blob in turn:
// nothing but the original may verify, and a flip inside the 64 signature
// bytes is a bad signature.
func TestVerifyEveryByteFlipRefused(t *testing.T) {
	alice := testKey(1)
	trust := mustTrust(t, trustLineFor("alice", pubOf(alice)))
	message := []byte("payload")
	blob := craft(alice, "ns", "sha512", message).bytes()
	sigStart := len(blob) - 64
	for i := range blob {
		for _, mask := range []byte{0x01, 0x80, 0xff} {
			mutated := append([]byte(nil), blob...)
			mutated[i] ^= mask
			_, err := Verify(armorBlob(mutated), message, "ns", trust)
			if err == nil {
				t.Fatalf("blob with byte %d xor %#x verified", i, mask)
			}
			reason := reasonOf(t, err)
			if i >= sigStart && reason != ReasonBadSignature {
				t.Fatalf("signature byte %d xor %#x: reason %s, want %s", i, mask, reason, ReasonBadSignature)
			}
		}
	}
}

func TestVerifyArmor(t *testing.T) {
	alice := testKey(1)
	trust := mustTrust(t, trustLineFor("alice", pubOf(alice)))
	message := []byte("payload")
	blob := craft(alice, "ns", "sha512", message).bytes()
	good := armorBlob(blob)
	body := strings.TrimSuffix(strings.TrimPrefix(good, armorBegin+"\n"), armorEnd+"\n")
	oneLine := strings.ReplaceAll(body, "\n", "")

	accepted := []struct{ name, text string }{
		{"as written by ssh-keygen", good},
		{"text around the block", "Here is my signature:\n" + good + "\nthanks\n"},
		{"CRLF line endings", strings.ReplaceAll(good, "\n", "\r\n")},
		{"body on one line", armorBegin + oneLine + armorEnd},
		{"indented body", armorBegin + "\n\t  " + strings.ReplaceAll(body, "\n", "\n    ") + armorEnd},
		{"no trailing newline", strings.TrimSuffix(good, "\n")},
	}
	for _, tc := range accepted {
		t.Run("accept/"+tc.name, func(t *testing.T) {
			if _, err := Verify(tc.text, message, "ns", trust); err != nil {
				t.Fatalf("Verify: %v", err)
			}
		})
	}

	refused := []struct{ name, text string }{
		{"empty string", ""},
		{"bare base64", oneLine},
		{"missing BEGIN line", strings.TrimPrefix(good, armorBegin)},
		{"missing END line", strings.TrimSuffix(good, armorEnd+"\n")},
		{"END before BEGIN", armorEnd + "\n" + oneLine + "\n" + armorBegin + "\n"},
		{"other armor type", strings.ReplaceAll(good, "SSH SIGNATURE", "PGP SIGNATURE")},
		{"two blocks", good + good},
		{"BEGIN inside body", armorBegin + "\n" + armorBegin + "\n" + body + armorEnd},
		{"empty body", armorBegin + "\n\n" + armorEnd},
		{"non-base64 character", strings.Replace(good, "U1NI", "U1N!", 1)},
		{"base64url alphabet", armorBegin + strings.NewReplacer("+", "-", "/", "_").Replace(oneLine) + "-" + armorEnd},
		{"missing padding", armorBegin + strings.TrimRight(oneLine, "=") + armorEnd},
		{"padding in the middle", armorBegin + oneLine[:8] + "=" + oneLine[8:] + armorEnd},
		{"non-ASCII in body", armorBegin + oneLine[:10] + "é" + oneLine[10:] + armorEnd},
		{"NUL in body", armorBegin + oneLine[:10] + "\x00" + oneLine[10:] + armorEnd},
	}
	if !strings.HasSuffix(oneLine, "=") {
		t.Fatalf("the blob needs padding for the missing-padding case to mean anything: %q", oneLine)
	}
	for _, tc := range refused {
		t.Run("refuse/"+tc.name, func(t *testing.T) {
			_, err := Verify(tc.text, message, "ns", trust)
			expectReason(t, err, ReasonMalformedArmor)
		})
	}

	// Non-canonical trailing bits: "AB==" and "AA==" decode to the same
	// byte under a lax decoder; only the canonical form is accepted.
	t.Run("refuse/non-canonical padding bits", func(t *testing.T) {
		short := armorBlob([]byte("SSHSIG\x00")) // 7 bytes: "U1NIU0lHAA==", last char carries 4 unused bits
		i := strings.Index(short, "AA==")
		if i < 0 {
			t.Fatalf("unexpected encoding %q", short)
		}
		_, err := Verify(short[:i]+"AB=="+short[i+4:], message, "ns", trust)
		expectReason(t, err, ReasonMalformedArmor)
	})
}

func TestErrorMatching(t *testing.T) {
	trust := mustTrust(t, trustLineFor("alice", pubOf(testKey(1))))
	_, err := Verify(craft(testKey(1), "a", "sha512", nil).armored(), nil, "b", trust)
	if !errors.Is(err, ReasonWrongNamespace) {
		t.Fatalf("errors.Is(%v, ReasonWrongNamespace) = false", err)
	}
	if errors.Is(err, ReasonBadSignature) {
		t.Fatalf("errors.Is matched the wrong reason")
	}
	if !errors.Is(err, &Error{Reason: ReasonWrongNamespace}) {
		t.Fatalf("errors.Is with an *Error target failed")
	}
	var e *Error
	if !errors.As(err, &e) || e.Reason != ReasonWrongNamespace || e.Line != 0 {
		t.Fatalf("errors.As: %#v", e)
	}
	for _, want := range []string{`"a"`, `"b"`, "ssh-keygen -Y sign", "-n b"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not mention %s", err.Error(), want)
		}
	}
}

func TestVerifyMessageQuotesHostileFields(t *testing.T) {
	alice := testKey(1)
	trust := mustTrust(t, trustLineFor("alice", pubOf(alice)))
	hostile := "evil\n\x1b[2Jlog line" + strings.Repeat("x", 10000)
	_, err := Verify(craft(alice, hostile, "sha512", nil).armored(), nil, "ns", trust)
	expectReason(t, err, ReasonWrongNamespace)
	if msg := err.Error(); strings.ContainsAny(msg, "\n\x1b") || len(msg) > 400 {
		t.Fatalf("message not sanitised or bounded (%d bytes): %q", len(msg), msg)
	}
}

func BenchmarkVerify(b *testing.B) {
	alice := testKey(1)
	trust := mustTrust(b, trustLineFor("alice", pubOf(alice)))
	message := []byte(overridePayload)
	armored := craft(alice, "stratum-guard-override", "sha512", message).armored()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Verify(armored, message, "stratum-guard-override", trust); err != nil {
			b.Fatal(err)
		}
	}
}
