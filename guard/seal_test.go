package guard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/guard/internal/canon"
)

// makeLegacy turns a resource into what an older Stratum wrote: no seal
// fields in registry.json, no seal flag in engine.json, modes 0755/0644.
func (f *fixture) makeLegacy(id string) {
	f.t.Helper()
	dir := f.dir(id)
	regPath := filepath.Join(dir, registryFile)
	data, err := os.ReadFile(regPath)
	if err != nil {
		f.t.Fatal(err)
	}
	v, _ := canon.Decode(data)
	m := v.(map[string]any)
	for _, k := range []string{"seal", "seal_version", "registered_checksum", "ledger_entries", "ledger_head", "ledger_pending"} {
		delete(m, k)
	}
	b, _ := canon.MarshalIndent(m)
	os.WriteFile(regPath, b, 0o644)
	os.WriteFile(filepath.Join(dir, markerFile), []byte(`{"owner":"go","since":"2025-06-01T00:00:00.000Z"}`+"\n"), 0o644)
	os.Chmod(filepath.Join(dir, ledgerFile), 0o644)
	os.Chmod(dir, 0o755)
}

// TestLegacyRegistry: a registry written before registries were sealed
// still loads and is checked the reference's way; verify says it is not
// sealed; its next write seals it (and marks engine.json, so that removing
// the seal later is tampering) and tightens the modes.
func TestLegacyRegistry(t *testing.T) {
	f := newFixture(t)
	id := "old"
	f.register(f.featureRequest(id))
	f.write("plan.md", "x")
	f.mustTransition(id, "draft", "review")
	f.makeLegacy(id)

	vr, err := f.verify(id)
	if err != nil || vr.Sealed || vr.Entries != 1 || vr.CurrentState != "review" {
		t.Fatalf("verify of a legacy registry: %+v %v", vr, err)
	}
	joined := strings.Join(vr.Warnings, "\n")
	for _, want := range []string{"has no seal", "mode 0755", "ledger.jsonl is mode 0644"} {
		if !strings.Contains(joined, want) {
			t.Errorf("verify warnings %q do not say %q", vr.Warnings, want)
		}
	}
	// The reference's rule for a torn tail still holds for it.
	path := filepath.Join(f.dir(id), ledgerFile)
	os.WriteFile(path, append(f.ledgerBytes(id), `{"entry_digest":"ab`...), 0o644)
	if h := f.history(id); len(h.Ledger) != 1 {
		t.Fatalf("legacy torn tail: %+v", h)
	}

	// The next write seals it.
	f.mustTransition(id, "review", "draft")
	vr, err = f.verify(id)
	if err != nil || !vr.Sealed || len(vr.Warnings) != 0 || vr.Entries != 2 {
		t.Fatalf("verify after the next write: %+v %v", vr, err)
	}
	if m := readMarker(f.dir(id)); m.RegistrySeal != sealVersion || m.Since != "2025-06-01T00:00:00.000Z" {
		t.Fatalf("marker after sealing: %+v", m)
	}
	r := mustLoad(t, f, id)
	if r.RegisteredChecksum != "" {
		t.Fatalf("a registry sealed after the fact claims its registered policy: %s", r.RegisteredChecksum)
	}
	// From now on it has the same protection as a new one.
	os.Remove(path)
	_, err = f.verify(id)
	wantCode(t, err, CodeTampered, "truncated or deleted")
}

// TestVerifyHead: verify prints a head to keep; a later verify with it
// finds it however many entries came after, and so does any entry digest
// of the resource; anything else is refused.
func TestVerifyHead(t *testing.T) {
	f := newFixture(t)
	id := "h"
	f.register(f.featureRequest(id))
	v0, err := f.verify(id)
	if err != nil || v0.Entries != 0 || v0.LedgerHead != "" || len(v0.Head) != 64 {
		t.Fatalf("verify of a fresh registration: %+v %v", v0, err)
	}
	f.write("plan.md", "x")
	r1 := f.mustTransition(id, "draft", "review")
	v1, _ := f.verify(id)
	f.mustTransition(id, "review", "draft")
	f.mustTransition(id, "draft", "review")
	for _, c := range []struct {
		head    string
		entries int
		kind    string
	}{
		{v0.Head, 0, "head"},
		{v1.Head, 1, "head"},
		{r1.LedgerRef, 1, "entry_digest"},
	} {
		vr, err := f.verify(id, c.head)
		if err != nil || vr.HeadChecked == nil || vr.HeadChecked.Entries != c.entries || vr.HeadChecked.Kind != c.kind || vr.Entries != 3 {
			t.Fatalf("verify --head %s: %+v %v", short(c.head), vr, err)
		}
	}
	if v1.Head == v0.Head || v1.Head == v1.LedgerHead {
		t.Fatal("heads do not move with the ledger, or are the bare entry digest")
	}
	_, err = f.verify(id, strings.Repeat("0", 64))
	wantCode(t, err, CodeTampered, "not in its history")
	_, err = f.verify(id, "HEAD")
	wantCode(t, err, CodeInvalidArgument)
	// Another resource's head is not this one's.
	f.register(f.featureRequest("other"))
	vo, _ := f.verify("other")
	_, err = f.verify(id, vo.Head)
	wantCode(t, err, CodeTampered)
}

// TestLegacyRegistryPolicyEdit: a registry without a seal (written by an
// earlier Stratum or by the reference's engines) has only the reference's
// policy checksum to protect its policy, so an edited policy is caught by
// the checksum alone (docs/guard.md, "What is protected, and how").
func TestLegacyRegistryPolicyEdit(t *testing.T) {
	f := newFixture(t)
	id := "old-edit"
	f.register(f.featureRequest(id))
	f.makeLegacy(id)
	regPath := filepath.Join(f.dir(id), registryFile)
	data, err := os.ReadFile(regPath)
	if err != nil {
		t.Fatal(err)
	}
	v, err := canon.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	m["graph"].(map[string]any)["draft"] = []any{"review", "done"} // a shortcut past review
	b, err := canon.MarshalIndent(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(regPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = f.verify(id)
	wantCode(t, err, CodeTampered, "stored checksum")
	_, err = f.transition(id, "draft", "done")
	wantCode(t, err, CodeTampered, "stored checksum")
}
