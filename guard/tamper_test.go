package guard

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/guard/internal/canon"
	"github.com/stratum-go/stratum/guard/internal/ledger"
)

// tamperFixture is a resource with a history of four attempts (applied,
// refused, applied, applied; optionally a policy upgrade first), the head
// kept after them, and copies of both files taken after the second
// attempt (for rollbacks).
type tamperFixture struct {
	*fixture
	id              string
	kept            string // the head printed by verify after the last attempt
	regAt2, ledAt2  []byte // registry.json and ledger.jsonl after attempt 2
	regPath, ledger string
}

func newTamperFixture(t *testing.T, upgraded bool) *tamperFixture {
	f := &tamperFixture{fixture: newFixture(t), id: "compose:FEAT-1"}
	req := f.featureRequest(f.id)
	f.register(req)
	f.regPath, f.ledger = filepath.Join(f.dir(f.id), registryFile), filepath.Join(f.dir(f.id), ledgerFile)
	if upgraded {
		if _, err := f.g.Upgrade(context.Background(), UpgradeRequest{ResourceID: f.id, NewGraph: obj(t, `{"draft":["review","parked"],"review":["done","draft"],"done":[],"parked":[]}`),
			NewEdgePredicates: req.EdgePredicates, NewTerminal: req.Terminal, NewStakes: req.Stakes, Rationale: "park"}); err != nil {
			t.Fatal(err)
		}
	}
	f.write("plan.md", "draft")
	want := []string{"applied", "refused", "applied", "applied"}
	for i, e := range [][2]string{{"draft", "review"}, {"review", "done"}, {"review", "draft"}, {"draft", "review"}} {
		if r := f.mustTransition(f.id, e[0], e[1]); r.Status != want[i] {
			t.Fatalf("setup attempt %d: %s", i+1, r.Status)
		}
		if i == 1 {
			f.regAt2, f.ledAt2 = f.readFile(f.regPath), f.readFile(f.ledger)
		}
	}
	vr, err := f.verify(f.id)
	if err != nil {
		t.Fatal(err)
	}
	f.kept = vr.Head
	return f
}

func (f *tamperFixture) readFile(p string) []byte {
	f.t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		f.t.Fatal(err)
	}
	return b
}

func (f *tamperFixture) writeFile(p string, b []byte) {
	f.t.Helper()
	if err := os.WriteFile(p, b, 0o600); err != nil {
		f.t.Fatal(err)
	}
}

func (f *tamperFixture) lines() []string {
	return strings.SplitAfter(string(f.readFile(f.ledger)), "\n")[:f.count()]
}

func (f *tamperFixture) count() int { return strings.Count(string(f.readFile(f.ledger)), "\n") }

func (f *tamperFixture) writeLines(ls []string) { f.writeFile(f.ledger, []byte(strings.Join(ls, ""))) }

// editRegistry edits registry.json as someone with write access would:
// decoded, changed, written back pretty canonical, with the seal
// recomputed (the algorithm is documented) or not.
func (f *tamperFixture) editRegistry(reseal bool, edit func(m map[string]any)) {
	f.t.Helper()
	v, err := canon.Decode(f.readFile(f.regPath))
	if err != nil {
		f.t.Fatal(err)
	}
	m := v.(map[string]any)
	edit(m)
	if reseal {
		if m["seal"], err = sealOf(m); err != nil {
			f.t.Fatal(err)
		}
	}
	b, err := canon.MarshalIndent(m)
	if err != nil {
		f.t.Fatal(err)
	}
	f.writeFile(f.regPath, b)
}

// policyChecksumOf recomputes the reference checksum of a raw record.
func (f *tamperFixture) policyChecksumOf(m map[string]any) string {
	p, err := rawPolicy(m, m["initial"].(string))
	if err != nil {
		f.t.Fatal(err)
	}
	sum, err := p.checksum()
	if err != nil {
		f.t.Fatal(err)
	}
	return sum
}

// rehash rewrites the ledger with entry i edited and every digest
// recomputed, so that the chain is valid again; it returns the new head.
func (f *tamperFixture) rehash(i int, edit func(e *ledger.Entry)) (head string, n int) {
	f.t.Helper()
	l, err := ledger.Parse(f.readFile(f.ledger))
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	prev := ""
	for k := range l.Entries {
		e := l.Entries[k]
		if err := e.DecodeVerdict(); err != nil {
			f.t.Fatal(err)
		}
		if k == i {
			edit(&e)
		}
		line, err := ledger.Seal(&e, prev)
		if err != nil {
			f.t.Fatal(err)
		}
		out = append(out, string(line)+"\n")
		prev = e.EntryDigest
	}
	f.writeLines(out)
	return prev, len(out)
}

// forgedLine is a well-formed entry with a correct digest, chained after
// the current head: what someone who read the documentation can append.
func (f *tamperFixture) forgedLine() string {
	l, err := ledger.Parse(f.readFile(f.ledger))
	if err != nil {
		f.t.Fatal(err)
	}
	e := ledger.Entry{TsMs: 1, FromState: "review", ToState: "done", Outcome: "applied", Kind: "transition", ResolvedBy: "agent", PayloadDigestVersion: 2}
	line, err := ledger.Seal(&e, l.Head)
	if err != nil {
		f.t.Fatal(err)
	}
	return string(line) + "\n"
}

// detection is where a tampering case must be caught.
type detection int

const (
	locally      detection = iota // verify fails and so does the next mutation
	onlyAnAnchor                  // verify passes; verify --head with the kept head fails
)

// TestTamperMatrix: every way of editing a resource's files that the
// threat model names, each caught where docs/guard.md says ("What each
// check catches"): locally (verify fails, the next transition is refused
// with guard_tampered or ledger_corrupt, and verify still fails after it:
// nothing is laundered), or against a head kept elsewhere.
func TestTamperMatrix(t *testing.T) {
	cases := []struct {
		name     string
		upgraded bool
		tamper   func(f *tamperFixture)
		want     detection
	}{
		{"ledger: edit a value in an interior line", false, func(f *tamperFixture) {
			ls := f.lines()
			ls[1] = strings.Replace(ls[1], `"to_state":"done"`, `"to_state":"draft"`, 1)
			f.writeLines(ls)
		}, locally},
		{"ledger: edit a value in the last line", false, func(f *tamperFixture) {
			ls := f.lines()
			ls[3] = strings.Replace(ls[3], `"resolved_by":"agent"`, `"resolved_by":"human"`, 1)
			f.writeLines(ls)
		}, locally},
		{"ledger: delete an interior line", false, func(f *tamperFixture) {
			ls := f.lines()
			f.writeLines(append(ls[:1:1], ls[2:]...))
		}, locally},
		{"ledger: delete the last line", false, func(f *tamperFixture) { f.writeLines(f.lines()[:3]) }, locally},
		{"ledger: swap two interior lines", false, func(f *tamperFixture) {
			ls := f.lines()
			ls[1], ls[2] = ls[2], ls[1]
			f.writeLines(ls)
		}, locally},
		{"ledger: swap the last two lines", false, func(f *tamperFixture) {
			ls := f.lines()
			ls[2], ls[3] = ls[3], ls[2]
			f.writeLines(ls)
		}, locally},
		{"ledger: truncate in the middle of the last line", false, func(f *tamperFixture) {
			ls := f.lines()
			ls[3] = ls[3][:len(ls[3])/2]
			f.writeLines(ls)
		}, locally},
		{"ledger: truncate in the middle of an earlier line", false, func(f *tamperFixture) {
			ls := f.lines()
			f.writeLines([]string{ls[0], ls[1][:len(ls[1])/2]})
		}, locally},
		{"ledger: append a garbage line", false, func(f *tamperFixture) { f.writeLines(append(f.lines(), "garbage\n")) }, locally},
		{"ledger: append garbage without a newline", false, func(f *tamperFixture) { f.writeLines(append(f.lines(), `{"entry_digest":"00`)) }, locally},
		{"ledger: append a well-formed forged line with a correct digest", false, func(f *tamperFixture) {
			f.writeLines(append(f.lines(), f.forgedLine()))
		}, locally},
		{"ledger: delete ledger.jsonl", false, func(f *tamperFixture) { os.Remove(f.ledger) }, locally},
		{"ledger: truncate to an earlier consistent prefix", false, func(f *tamperFixture) { f.writeLines(f.lines()[:2]) }, locally},
		{"ledger: rehash everything after an interior edit", false, func(f *tamperFixture) {
			f.rehash(1, func(e *ledger.Entry) { e.Outcome = "applied" })
		}, locally},
		{"ledger and registry: rehash the ledger, record its new head, reseal", false, func(f *tamperFixture) {
			head, n := f.rehash(1, func(e *ledger.Entry) { e.Outcome = "applied" })
			f.editRegistry(true, func(m map[string]any) { m["ledger_head"], m["ledger_entries"] = head, n })
		}, onlyAnAnchor},
		{"ledger and registry: roll both back to an earlier consistent pair", false, func(f *tamperFixture) {
			f.writeFile(f.ledger, f.ledAt2)
			f.writeFile(f.regPath, f.regAt2)
		}, onlyAnAnchor},
		{"registry: edit workspace_root", false, func(f *tamperFixture) {
			f.editRegistry(false, func(m map[string]any) { m["workspace_root"] = f.tmp })
		}, locally},
		{"registry: edit initial", false, func(f *tamperFixture) {
			f.editRegistry(false, func(m map[string]any) { m["initial"] = "review" })
		}, locally},
		{"registry: add an edge", false, func(f *tamperFixture) {
			f.editRegistry(false, func(m map[string]any) { m["graph"].(map[string]any)["draft"] = []any{"review", "done"} })
		}, locally},
		{"registry: add an edge, recompute the checksum", false, func(f *tamperFixture) {
			f.editRegistry(false, func(m map[string]any) {
				m["graph"].(map[string]any)["draft"] = []any{"review", "done"}
				m["checksum"] = f.policyChecksumOf(m)
			})
		}, locally},
		{"registry: add an edge, recompute checksum and seal", false, func(f *tamperFixture) {
			f.editRegistry(true, func(m map[string]any) {
				m["graph"].(map[string]any)["draft"] = []any{"review", "done"}
				m["checksum"] = f.policyChecksumOf(m)
			})
		}, locally},
		{"registry: add an edge, recompute checksum, registered_checksum and seal", false, func(f *tamperFixture) {
			f.editRegistry(true, func(m map[string]any) {
				m["graph"].(map[string]any)["draft"] = []any{"review", "done"}
				m["checksum"] = f.policyChecksumOf(m)
				m["registered_checksum"] = m["checksum"]
			})
		}, onlyAnAnchor},
		{"registry after an upgrade: add an edge, recompute checksum, registered_checksum and seal", true, func(f *tamperFixture) {
			f.editRegistry(true, func(m map[string]any) {
				m["graph"].(map[string]any)["draft"] = []any{"review", "parked", "done"}
				m["checksum"] = f.policyChecksumOf(m)
				m["registered_checksum"] = m["checksum"]
			})
		}, locally},
		{"registry: edit workspace_root, recompute the seal", false, func(f *tamperFixture) {
			f.editRegistry(true, func(m map[string]any) { m["workspace_root"] = f.tmp })
		}, onlyAnAnchor},
		{"registry: edit initial, recompute the seal", false, func(f *tamperFixture) {
			f.editRegistry(true, func(m map[string]any) { m["initial"] = "review" })
		}, onlyAnAnchor},
		{"registry: edit the current_state cache", false, func(f *tamperFixture) {
			f.editRegistry(false, func(m map[string]any) { m["current_state"] = "done" })
		}, locally},
		{"registry: edit the recorded ledger head", false, func(f *tamperFixture) {
			f.editRegistry(false, func(m map[string]any) { m["ledger_entries"] = 2.0 })
		}, locally},
		{"registry: roll back registry.json alone", false, func(f *tamperFixture) { f.writeFile(f.regPath, f.regAt2) }, locally},
		{"registry: delete registry.json", false, func(f *tamperFixture) { os.Remove(f.regPath) }, locally},
		{"registry: strip the seal", false, func(f *tamperFixture) {
			f.editRegistry(false, func(m map[string]any) {
				for _, k := range []string{"seal", "seal_version", "registered_checksum", "ledger_entries", "ledger_head", "ledger_pending"} {
					delete(m, k)
				}
			})
		}, locally},
		{"registry: strip the seal and the marker's record of it", false, func(f *tamperFixture) {
			f.editRegistry(false, func(m map[string]any) {
				for _, k := range []string{"seal", "seal_version", "registered_checksum", "ledger_entries", "ledger_head", "ledger_pending"} {
					delete(m, k)
				}
			})
			f.writeFile(filepath.Join(f.dir(f.id), markerFile), []byte(`{"owner":"go","since":"2026-01-01T00:00:00.000Z"}`+"\n"))
		}, onlyAnAnchor},
		{"resource: delete its directory", false, func(f *tamperFixture) { os.RemoveAll(f.dir(f.id)) }, onlyAnAnchor},
		{"resource: delete registry and ledger, register it again", false, func(f *tamperFixture) {
			os.Remove(f.regPath)
			os.Remove(f.ledger)
			f.register(f.featureRequest(f.id))
		}, onlyAnAnchor},
	}
	tampered := func(err error) bool {
		c := CodeOf(err)
		return c == CodeTampered || c == CodeLedgerCorrupt
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newTamperFixture(t, c.upgraded)
			c.tamper(f)
			_, verr := f.verify(f.id)
			switch c.want {
			case locally:
				if !tampered(verr) {
					t.Fatalf("verify: %v, want guard_tampered or ledger_corrupt", verr)
				}
				res, err := f.transition(f.id, "review", "draft")
				if !tampered(err) {
					t.Fatalf("the next transition: %+v %v, want it refused as tampering", res, err)
				}
				if _, err := f.verify(f.id); !tampered(err) {
					t.Fatalf("verify after the next transition: %v (laundered)", err)
				}
				t.Logf("verify: %v", verr)
			case onlyAnAnchor:
				if verr != nil && CodeOf(verr) != CodeNotFound {
					t.Fatalf("verify: %v; the table says only an anchor catches this (update it if the local check got better)", verr)
				}
				_, err := f.verify(f.id, f.kept)
				if !tampered(err) && CodeOf(err) != CodeNotFound {
					t.Fatalf("verify --head %s: %v, want the kept head reported missing", short(f.kept), err)
				}
				t.Logf("verify --head: %v", err)
			}
		})
	}
	// And the untouched resource passes both checks.
	f := newTamperFixture(t, false)
	if vr, err := f.verify(f.id, f.kept); err != nil || vr.HeadChecked == nil || vr.HeadChecked.Entries != 4 {
		t.Fatalf("untouched: %+v %v", vr, err)
	}
}

// TestOverrideRefusesTamperedRegistry: unlike the reference, an override
// runs the tamper check, because its write would seal an edited record
// (a redirected workspace_root would become the sealed truth). Migrate,
// the repair tool, still works.
func TestOverrideRefusesTamperedRegistry(t *testing.T) {
	f := newTamperFixture(t, false)
	alice := newKey(t, "alice", "ed25519")
	f.g.setTrust([]byte(alice.allowed("alice")))
	ctx := context.Background()
	f.editRegistry(false, func(m map[string]any) { m["workspace_root"] = f.tmp })
	areq := AuthorizeRequest{Kind: "override", ResourceID: f.id, FromState: "review", ToState: "done", Rationale: "ship"}
	sig := alice.sign(t, NamespaceOverride, f.authorizePayload(areq))
	_, err := f.g.Override(ctx, OverrideRequest{ResourceID: f.id, FromState: "review", ToState: "done", Rationale: "ship", Authorization: sig})
	wantCode(t, err, CodeTampered, "seal")
	if _, err := f.verify(f.id); CodeOf(err) != CodeTampered {
		t.Fatalf("verify after the refused override: %v", err)
	}
}
