package sshsig

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// ---- the real ssh-keygen (tests only; production code never runs it) ----

// sshKeygen returns the path of ssh-keygen. Its absence fails the test
// rather than skipping it (as in package guard): a silently skipped
// agreement check with the real tool would look like a pass.
func sshKeygen(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("ssh-keygen")
	if err != nil {
		t.Fatalf("ssh-keygen is required to produce real signatures: %v", err)
	}
	return path
}

// runKeygen runs ssh-keygen with a clean environment: no agent socket, a
// private HOME, so nothing of the developer's setup leaks in.
func runKeygen(t testing.TB, dir string, stdin []byte, args ...string) string {
	t.Helper()
	cmd := exec.Command(sshKeygen(t), args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "LC_ALL=C"}
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("ssh-keygen %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

type keygenKey struct {
	private string // path of the private key file
	pubLine string // "ssh-ed25519 AAAA... comment"
}

// generateKey creates a key pair of the given type with no passphrase.
func generateKey(t testing.TB, dir, name, keyType string, extra ...string) keygenKey {
	t.Helper()
	priv := filepath.Join(dir, name)
	args := append([]string{"-q", "-t", keyType, "-N", "", "-C", name + "@test", "-f", priv}, extra...)
	runKeygen(t, dir, nil, args...)
	pub, err := os.ReadFile(priv + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	return keygenKey{private: priv, pubLine: strings.TrimSpace(string(pub))}
}

// signWithKeygen signs message under namespace with `ssh-keygen -Y sign`
// and returns the armored .sig text.
func signWithKeygen(t testing.TB, dir string, key keygenKey, namespace string, message []byte, opts ...string) string {
	t.Helper()
	f, err := os.CreateTemp(dir, "payload-*")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(message); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	args := []string{"-Y", "sign", "-f", key.private, "-n", namespace}
	for _, o := range opts {
		args = append(args, "-O", o)
	}
	runKeygen(t, dir, nil, append(args, f.Name())...)
	sig, err := os.ReadFile(f.Name() + ".sig")
	if err != nil {
		t.Fatal(err)
	}
	return string(sig)
}

// keygenFingerprint is the fingerprint `ssh-keygen -l -f <pub>` prints.
func keygenFingerprint(t testing.TB, dir, pubLine string) string {
	t.Helper()
	f := filepath.Join(dir, "fp.pub")
	if err := os.WriteFile(f, []byte(pubLine+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := strings.Fields(runKeygen(t, dir, nil, "-l", "-f", f))
	if len(out) < 2 || !strings.HasPrefix(out[1], "SHA256:") {
		t.Fatalf("unexpected ssh-keygen -l output %q", out)
	}
	return out[1]
}

// ---- native crafting of SSHSIG blobs, to change one field at a time ----

type blobSpec struct {
	magic     string
	version   uint32
	keyBlob   []byte
	namespace string
	reserved  string
	hashAlg   string
	sigBlob   []byte
	trailing  []byte
}

func wireString(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = binary.BigEndian.AppendUint32(b, uint32(len(p)))
		b = append(b, p...)
	}
	return b
}

func (s blobSpec) bytes() []byte {
	b := []byte(s.magic)
	b = binary.BigEndian.AppendUint32(b, s.version)
	b = append(b, wireString(s.keyBlob, []byte(s.namespace), []byte(s.reserved), []byte(s.hashAlg), s.sigBlob)...)
	return append(b, s.trailing...)
}

func (s blobSpec) armored() string { return armorBlob(s.bytes()) }

// testKey is a deterministic Ed25519 key for crafted signatures.
func testKey(seed byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize))
}

func pubOf(priv ed25519.PrivateKey) ed25519.PublicKey { return priv.Public().(ed25519.PublicKey) }

func keyBlobOf(pub ed25519.PublicKey) []byte {
	return wireString([]byte("ssh-ed25519"), pub)
}

// trustLineFor renders a trust-root line for pub.
func trustLineFor(principals string, pub ed25519.PublicKey) string {
	return principals + " ssh-ed25519 " + base64.StdEncoding.EncodeToString(keyBlobOf(pub)) + " test key"
}

// craft builds a correct signature over message with priv, independently of
// the production code (own hashing, own signed-data layout).
func craft(priv ed25519.PrivateKey, namespace, hashAlg string, message []byte) blobSpec {
	var digest []byte
	switch hashAlg {
	case "sha256":
		d := sha256.Sum256(message)
		digest = d[:]
	default:
		d := sha512.Sum512(message)
		digest = d[:]
	}
	signed := append([]byte("SSHSIG"), wireString([]byte(namespace), nil, []byte(hashAlg), digest)...)
	sig := ed25519.Sign(priv, signed)
	return blobSpec{
		magic:     "SSHSIG",
		version:   1,
		keyBlob:   keyBlobOf(pubOf(priv)),
		namespace: namespace,
		hashAlg:   hashAlg,
		sigBlob:   wireString([]byte("ssh-ed25519"), sig),
	}
}

// armorBlob wraps blob the way ssh-keygen does (70 columns).
func armorBlob(blob []byte) string {
	enc := base64.StdEncoding.EncodeToString(blob)
	var b strings.Builder
	b.WriteString("-----BEGIN SSH SIGNATURE-----\n")
	for len(enc) > 70 {
		b.WriteString(enc[:70] + "\n")
		enc = enc[70:]
	}
	b.WriteString(enc + "\n-----END SSH SIGNATURE-----\n")
	return b.String()
}

// mustTrust parses a trust root from lines or fails the test.
func mustTrust(t testing.TB, lines ...string) *AllowedSigners {
	t.Helper()
	a, err := ParseAllowedSigners([]byte(strings.Join(lines, "\n") + "\n"))
	if err != nil {
		t.Fatalf("ParseAllowedSigners: %v", err)
	}
	return a
}

// reasonOf returns the Reason of an *Error, failing the test for any other
// error type: every refusal must be typed.
func reasonOf(t testing.TB, err error) Reason {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *sshsig.Error", err, err)
	}
	if e.Message == "" {
		t.Fatalf("error with reason %s has no message", e.Reason)
	}
	return e.Reason
}

func expectReason(t testing.TB, err error, want Reason) {
	t.Helper()
	if err == nil {
		t.Fatalf("got success, want refusal %s", want)
	}
	if got := reasonOf(t, err); got != want {
		t.Fatalf("reason = %s, want %s (error: %v)", got, want, err)
	}
	if !errors.Is(err, want) {
		t.Fatalf("errors.Is(err, %s) = false", want)
	}
}
