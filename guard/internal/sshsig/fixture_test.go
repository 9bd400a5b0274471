package sshsig

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "regenerate the testdata fixtures with the real ssh-keygen")

// The committed fixtures are real ssh-keygen output, so the verifier is
// checked against OpenSSH even on a machine without ssh-keygen, and the fuzz
// targets start from genuine signatures. Regenerate with:
//
//	go test ./guard/internal/sshsig -run TestFixtures -update
const (
	fixtureNamespace = "stratum-guard-override"
	fixturePrincipal = "release-signer"
)

func fixturePath(name string) string { return filepath.Join("testdata", name) }

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(fixturePath(name))
	if err != nil {
		t.Fatalf("read fixture (regenerate with -update): %v", err)
	}
	return b
}

func writeFixtures(t *testing.T) {
	dir := t.TempDir()
	signer := generateKey(t, dir, "signer", "ed25519")
	rsa := generateKey(t, dir, "rsa", "rsa", "-b", "2048")
	payload := []byte(overridePayload)
	files := map[string]string{
		"payload.json": overridePayload,
		"allowed_signers": "# Test-only trust root: the private key was thrown away after signing.\n" +
			fixturePrincipal + ",ops " + signer.pubLine + "\n",
		"payload.json.sig":        signWithKeygen(t, dir, signer, fixtureNamespace, payload),
		"payload.json.sha256.sig": signWithKeygen(t, dir, signer, fixtureNamespace, payload, "hashalg=sha256"),
		"payload.json.rsa.sig":    signWithKeygen(t, dir, rsa, fixtureNamespace, payload),
		"signer.fingerprint":      keygenFingerprint(t, dir, signer.pubLine) + "\n",
	}
	for name, content := range files {
		if err := os.WriteFile(fixturePath(name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFixtures(t *testing.T) {
	if *update {
		writeFixtures(t)
	}
	trust, err := ParseAllowedSigners(readFixture(t, "allowed_signers"))
	if err != nil {
		t.Fatal(err)
	}
	payload := readFixture(t, "payload.json")
	wantFP := strings.TrimSpace(string(readFixture(t, "signer.fingerprint")))

	for _, name := range []string{"payload.json.sig", "payload.json.sha256.sig"} {
		t.Run(name, func(t *testing.T) {
			got, err := Verify(string(readFixture(t, name)), payload, fixtureNamespace, trust)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if got.Principal != fixturePrincipal || got.Fingerprint != wantFP {
				t.Fatalf("got %+v, want %s (%s)", got, fixturePrincipal, wantFP)
			}
		})
	}
	t.Run("hash algorithms recorded as expected", func(t *testing.T) {
		for name, alg := range map[string]string{"payload.json.sig": "sha512", "payload.json.sha256.sig": "sha256"} {
			blob, err := decodeArmor(string(readFixture(t, name)))
			if err != nil {
				t.Fatal(err)
			}
			sig, err := parseBlob(blob)
			if err != nil {
				t.Fatal(err)
			}
			if sig.hashAlg != alg {
				t.Errorf("%s: hash %q, want %q", name, sig.hashAlg, alg)
			}
		}
	})
	t.Run("rsa refused", func(t *testing.T) {
		_, err := Verify(string(readFixture(t, "payload.json.rsa.sig")), payload, fixtureNamespace, trust)
		expectReason(t, err, ReasonUnsupportedKeyType)
	})
	t.Run("other purpose refused", func(t *testing.T) {
		_, err := Verify(string(readFixture(t, "payload.json.sig")), payload, "stratum-guard-migrate", trust)
		expectReason(t, err, ReasonWrongNamespace)
	})
}
