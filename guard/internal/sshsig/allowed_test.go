package sshsig

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func TestParseAllowedSignersAccepts(t *testing.T) {
	k1, k2 := pubOf(testKey(1)), pubOf(testKey(2))
	b1 := base64.StdEncoding.EncodeToString(keyBlobOf(k1))
	b2 := base64.StdEncoding.EncodeToString(keyBlobOf(k2))
	type want struct {
		principals []string
		key        []byte
	}
	tests := []struct {
		name string
		file string
		want []want
	}{
		{"empty file", "", nil},
		{"blank lines only", "\n\n   \n\t\n", nil},
		{"comments only", "# trust root\n  # indented comment\n#\n", nil},
		{"one signer no comment", "alice ssh-ed25519 " + b1, []want{{[]string{"alice"}, k1}}},
		{"one signer with comment", "alice ssh-ed25519 " + b1 + " alice@laptop 2026\n", []want{{[]string{"alice"}, k1}}},
		{"multiple principals", "alice,alice@example.com,ops ssh-ed25519 " + b1 + "\n", []want{{[]string{"alice", "alice@example.com", "ops"}, k1}}},
		{"comment that looks like options", "alice ssh-ed25519 " + b1 + " namespaces=\"x\" cert-authority\n", []want{{[]string{"alice"}, k1}}},
		{"several lines, comments and blanks", "# release signers\n\nalice ssh-ed25519 " + b1 + " a\n  # bob joined later\n\tbob ssh-ed25519 " + b2 + "\n", []want{{[]string{"alice"}, k1}, {[]string{"bob"}, k2}}},
		{"tabs and runs of spaces", "alice\t\tssh-ed25519   " + b1 + "\t comment\n", []want{{[]string{"alice"}, k1}}},
		{"CRLF line endings", "# c\r\nalice ssh-ed25519 " + b1 + "\r\n", []want{{[]string{"alice"}, k1}}},
		{"same key twice keeps both lines", "alice ssh-ed25519 " + b1 + "\nalias ssh-ed25519 " + b1 + "\n", []want{{[]string{"alice"}, k1}, {[]string{"alias"}, k1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := ParseAllowedSigners([]byte(tc.file))
			if err != nil {
				t.Fatalf("ParseAllowedSigners: %v", err)
			}
			if a.Len() != len(tc.want) {
				t.Fatalf("Len() = %d, want %d", a.Len(), len(tc.want))
			}
			got := a.Signers()
			for i, w := range tc.want {
				if strings.Join(got[i].Principals, "|") != strings.Join(w.principals, "|") {
					t.Errorf("signer %d principals = %q, want %q", i, got[i].Principals, w.principals)
				}
				if !bytes.Equal(got[i].Key, w.key) {
					t.Errorf("signer %d key mismatch", i)
				}
				if got[i].Fingerprint != Fingerprint(w.key) {
					t.Errorf("signer %d fingerprint = %q", i, got[i].Fingerprint)
				}
			}
		})
	}
}

func TestParseAllowedSignersRefuses(t *testing.T) {
	k1 := pubOf(testKey(1))
	b1 := base64.StdEncoding.EncodeToString(keyBlobOf(k1))
	good := "alice ssh-ed25519 " + b1
	tests := []struct {
		name string
		file string
		line int
	}{
		{"namespaces option", "alice namespaces=\"stratum-guard-override\" ssh-ed25519 " + b1, 1},
		{"namespaces option with spaces", "alice namespaces=\"a, b\" ssh-ed25519 " + b1, 1},
		{"cert-authority", "alice cert-authority ssh-ed25519 " + b1, 1},
		{"valid-before", "alice valid-before=20300101 ssh-ed25519 " + b1, 1},
		{"option list before principals", "namespaces=\"x\" ssh-ed25519 " + b1, 1},
		{"missing principal", "ssh-ed25519 " + b1 + " comment", 1},
		{"two fields", "alice ssh-ed25519", 1},
		{"one field", "alice", 1},
		{"empty principal in list", "alice,,bob ssh-ed25519 " + b1, 1},
		{"leading comma", ",alice ssh-ed25519 " + b1, 1},
		{"trailing comma", "alice, ssh-ed25519 " + b1, 1},
		{"quoted principal", "\"alice\" ssh-ed25519 " + b1, 1},
		{"wildcard principal", "*@example.com ssh-ed25519 " + b1, 1},
		{"negated principal", "!mallory ssh-ed25519 " + b1, 1},
		{"rsa key type", "alice ssh-rsa " + b1, 1},
		{"ecdsa key type", "alice ecdsa-sha2-nistp256 " + b1, 1},
		{"security key type", "alice sk-ssh-ed25519@openssh.com " + b1, 1},
		{"key type in wrong case", "alice SSH-ED25519 " + b1, 1},
		{"key blob not base64", "alice ssh-ed25519 not*base64", 1},
		{"key blob one character short", "alice ssh-ed25519 " + b1[:len(b1)-1], 1},
		{"key blob with stray padding", "alice ssh-ed25519 " + b1 + "==", 1},
		{"key blob of another type", "alice ssh-ed25519 " + base64.StdEncoding.EncodeToString(wireString([]byte("ssh-rsa"), []byte{1, 0, 1}, []byte{0})), 1},
		{"key blob truncated", "alice ssh-ed25519 " + base64.StdEncoding.EncodeToString(keyBlobOf(k1)[:40]), 1},
		{"key blob with trailing bytes", "alice ssh-ed25519 " + base64.StdEncoding.EncodeToString(append(keyBlobOf(k1), 0, 0, 0, 0)), 1},
		{"bad line after good ones", good + "\n# ok\n\nbob ssh-ed25519 AAAA\n", 4},
		{"non-ASCII in comment", good + "\n# signé par l'équipe\n", 2},
		{"non-ASCII in trailing comment", good + " café\n", 1},
		{"non-ASCII principal", "álice ssh-ed25519 " + b1, 1},
		{"UTF-8 byte order mark", "\ufeff" + good, 1},
		{"invalid UTF-8", good + "\n#\xff\n", 2},
		{"NUL byte", good + "\x00\n", 1},
		{"escape sequence in comment", "# \x1b[1A\x1b[2K\n" + good, 1},
		{"lone CR hides a line", good + "\r# nothing to see\n", 1},
		{"vertical tab", good + "\v\n", 1},
		{"form feed", "\f" + good, 1},
		{"DEL", good + "\x7f", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := ParseAllowedSigners([]byte(tc.file))
			if err == nil {
				t.Fatalf("accepted (%d signers)", a.Len())
			}
			expectReason(t, err, ReasonMalformedTrustRoot)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("not an *Error: %v", err)
			}
			if e.Line != tc.line {
				t.Errorf("line = %d, want %d (%v)", e.Line, tc.line, err)
			}
			if !strings.Contains(err.Error(), "unusable") {
				t.Errorf("message does not say the trust root is unusable: %v", err)
			}
		})
	}
}

func TestSignersReturnsCopy(t *testing.T) {
	a := mustTrust(t, trustLineFor("alice,al", pubOf(testKey(1))))
	s := a.Signers()
	s[0].Principals[0] = "mallory"
	s[0].Key[0] ^= 0xff
	again := a.Signers()
	if again[0].Principals[0] != "alice" || !bytes.Equal(again[0].Key, pubOf(testKey(1))) {
		t.Fatalf("Signers() exposed internal state: %+v", again[0])
	}
}

func TestNilAndZeroAllowedSigners(t *testing.T) {
	var nilTrust *AllowedSigners
	if nilTrust.Len() != 0 || nilTrust.Signers() != nil {
		t.Fatal("nil trust root is not empty")
	}
	if (&AllowedSigners{}).Len() != 0 {
		t.Fatal("zero trust root is not empty")
	}
	_, err := Verify(craft(testKey(1), "ns", "sha512", nil).armored(), nil, "ns", &AllowedSigners{})
	expectReason(t, err, ReasonEmptyTrustRoot)
}

func TestFingerprintMatchesSSHKeygen(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"k1", "k2", "k3"} {
		key := generateKey(t, dir, name, "ed25519")
		a := mustTrust(t, "someone "+key.pubLine)
		want := keygenFingerprint(t, dir, key.pubLine)
		if got := a.Signers()[0].Fingerprint; got != want {
			t.Errorf("%s: parsed fingerprint %q, ssh-keygen -l %q", name, got, want)
		}
		if got := Fingerprint(a.Signers()[0].Key); got != want {
			t.Errorf("%s: Fingerprint() %q, ssh-keygen -l %q", name, got, want)
		}
	}
}
