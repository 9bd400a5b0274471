package guard

import (
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// ---- real ssh-keygen, tests only (production code verifies natively) ----

type sshKey struct {
	priv    string
	pubLine string // "ssh-ed25519 AAAA... comment"
}

func keygen(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("ssh-keygen", args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "LC_ALL=C"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen %v: %v\n%s", args, err, out)
	}
}

func newKey(t *testing.T, name, typ string) sshKey {
	t.Helper()
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Fatal("ssh-keygen is required for the signed-path tests")
	}
	dir := t.TempDir()
	priv := filepath.Join(dir, name)
	args := []string{"-q", "-t", typ, "-N", "", "-C", name + "@test", "-f", priv}
	if typ == "rsa" {
		args = append(args, "-b", "2048")
	}
	keygen(t, dir, args...)
	pub, err := os.ReadFile(priv + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	return sshKey{priv: priv, pubLine: strings.TrimSpace(string(pub))}
}

// sign runs `ssh-keygen -Y sign` over message and returns the .sig text.
func (k sshKey) sign(t *testing.T, namespace string, message []byte) string {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "payload.json")
	if err := os.WriteFile(file, message, 0o600); err != nil {
		t.Fatal(err)
	}
	keygen(t, dir, "-Y", "sign", "-f", k.priv, "-n", namespace, file)
	sig, err := os.ReadFile(file + ".sig")
	if err != nil {
		t.Fatal(err)
	}
	return string(sig)
}

func (k sshKey) allowed(principal string) string { return principal + " " + k.pubLine + "\n" }

// reblob decodes an armored signature, lets mutate change the blob, and
// re-armors it.
func reblob(t *testing.T, armored string, mutate func([]byte) []byte) string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(armored), "\n")
	body := strings.Join(lines[1:len(lines)-1], "")
	blob, err := base64.StdEncoding.DecodeString(body)
	if err != nil {
		t.Fatal(err)
	}
	return "-----BEGIN SSH SIGNATURE-----\n" + base64.StdEncoding.EncodeToString(mutate(blob)) + "\n-----END SSH SIGNATURE-----\n"
}

func (f *fixture) authorizePayload(req AuthorizeRequest) []byte {
	f.t.Helper()
	res, err := f.g.Authorize(context.Background(), req)
	if err != nil {
		f.t.Fatal(err)
	}
	return []byte(res.Payload)
}

// TestOverridePayloadVector is the byte-exact payload of
// docs/guard-signatures.md, "What is signed".
func TestOverridePayloadVector(t *testing.T) {
	f := newFixture(t)
	res, err := f.g.Authorize(context.Background(), AuthorizeRequest{Kind: "override", ResourceID: "compose:FEAT-1", FromState: "review", ToState: "done", Rationale: "manual ship"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"action":"override","from_state":"review","ledger_head":"","rationale":"manual ship","resource_id":"compose:FEAT-1","to_state":"done"}`
	if res.Payload != want || res.Namespace != NamespaceOverride || res.Status != "ok" || len(res.Instructions) != 3 || !strings.Contains(res.Instructions[1], "-n stratum-guard-override") || res.Note == "" {
		t.Fatalf("authorize = %+v", res)
	}
	// Non-ASCII rationale is \u-escaped in what is signed.
	res, _ = f.g.Authorize(context.Background(), AuthorizeRequest{Kind: "override", ResourceID: "r", FromState: "a", ToState: "b", Rationale: "café 😀"})
	if !strings.Contains(res.Payload, `"rationale":"caf\u00e9 \ud83d\ude00"`) {
		t.Fatalf("payload %s", res.Payload)
	}
	for _, bad := range []AuthorizeRequest{
		{Kind: "delete", ResourceID: "r", Rationale: "x"},
		{Kind: "override", ResourceID: "r", Rationale: "x", FromState: "a"},
		{Kind: "migrate", ResourceID: "r", Rationale: "x", NewGraph: map[string]any{}},
	} {
		_, err := f.g.Authorize(context.Background(), bad)
		wantCode(t, err, CodeInvalidArgument)
	}
	_, err = f.g.Authorize(context.Background(), AuthorizeRequest{Kind: "override", ResourceID: "r", Rationale: "  ", FromState: "a", ToState: "b"})
	wantCode(t, err, CodeOverrideUnavailable)
}

// Authorize says plainly when no signature could be accepted: an empty
// or unusable trust root.
func TestAuthorizeWarnsWithoutSigners(t *testing.T) {
	alice := newKey(t, "alice", "ed25519")
	req := AuthorizeRequest{Kind: "override", ResourceID: "r", FromState: "a", ToState: "b", Rationale: "x"}
	tests := []struct {
		name, trust, want string
	}{
		{"empty", "# no signers\n", "lists no signer"},
		{"unusable", "alice not-a-key\n", "is unusable"},
		{"enrolled", alice.allowed("alice"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.g.setTrust([]byte(tt.trust))
			res, err := f.g.Authorize(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if (tt.want == "") != (res.Warning == "") || !strings.Contains(res.Warning, tt.want) {
				t.Errorf("warning %q, want one containing %q", res.Warning, tt.want)
			}
		})
	}
}

func TestOverride(t *testing.T) {
	f := newFixture(t)
	alice := newKey(t, "alice", "ed25519")
	bob := newKey(t, "bob", "ed25519")
	f.g.setTrust([]byte("# ops\n" + alice.allowed("alice,ops")))
	id := "compose:FEAT-1"
	f.register(f.featureRequest(id))
	ctx := context.Background()
	areq := AuthorizeRequest{Kind: "override", ResourceID: id, FromState: "draft", ToState: "review", Rationale: "hotfix, plan is on paper"}
	payload := f.authorizePayload(areq)
	if !strings.Contains(string(payload), `"ledger_head":""`) {
		t.Fatalf("payload %s", payload)
	}
	good := alice.sign(t, NamespaceOverride, payload)
	ovr := OverrideRequest{ResourceID: id, FromState: "draft", ToState: "review", Rationale: areq.Rationale, Authorization: good}

	refusals := []struct {
		name string
		mod  func(*OverrideRequest)
		msg  string
	}{
		{"empty authorization", func(r *OverrideRequest) { r.Authorization = " " }, "stratum guard authorize"},
		{"wrong namespace", func(r *OverrideRequest) { r.Authorization = alice.sign(t, NamespaceMigrate, payload) }, "namespace"},
		{"descriptor namespace", func(r *OverrideRequest) { r.Authorization = alice.sign(t, NamespaceDescriptors, payload) }, "namespace"},
		{"key not trusted", func(r *OverrideRequest) { r.Authorization = bob.sign(t, NamespaceOverride, payload) }, "not in the trust root"},
		{"other rationale", func(r *OverrideRequest) { r.Rationale = "something else" }, "does not match"},
		{"other edge signed", func(r *OverrideRequest) {
			p := f.authorizePayload(AuthorizeRequest{Kind: "override", ResourceID: id, FromState: "review", ToState: "done", Rationale: areq.Rationale})
			r.Authorization = alice.sign(t, NamespaceOverride, p)
		}, "does not match"},
		{"other resource signed", func(r *OverrideRequest) {
			p := f.authorizePayload(AuthorizeRequest{Kind: "override", ResourceID: "compose:FEAT-2", FromState: "draft", ToState: "review", Rationale: areq.Rationale})
			r.Authorization = alice.sign(t, NamespaceOverride, p)
		}, "does not match"},
		{"tampered payload", func(r *OverrideRequest) {
			r.Authorization = alice.sign(t, NamespaceOverride, []byte(strings.Replace(string(payload), "hotfix", "HOTFIX", 1)))
		}, "does not match"},
		{"trailing newline signed", func(r *OverrideRequest) { r.Authorization = alice.sign(t, NamespaceOverride, append(payload, '\n')) }, "does not match"},
		{"rsa key", func(r *OverrideRequest) {
			r.Authorization = newKey(t, "carol", "rsa").sign(t, NamespaceOverride, payload)
		}, "Ed25519"},
		{"truncated blob", func(r *OverrideRequest) {
			r.Authorization = reblob(t, good, func(b []byte) []byte { return b[:len(b)-1] })
		}, ""},
		{"trailing byte", func(r *OverrideRequest) {
			r.Authorization = reblob(t, good, func(b []byte) []byte { return append(b, 0) })
		}, ""},
		{"flipped signature byte", func(r *OverrideRequest) {
			r.Authorization = reblob(t, good, func(b []byte) []byte { b[len(b)-5] ^= 1; return b })
		}, "does not match"},
		{"not armored", func(r *OverrideRequest) { r.Authorization = "c2lnbmF0dXJl" }, ""},
		{"agent resolved", func(r *OverrideRequest) { r.ResolvedBy = "agent" }, "human"},
		{"blank rationale", func(r *OverrideRequest) { r.Rationale = " \n" }, "rationale"},
	}
	for _, c := range refusals {
		t.Run(c.name, func(t *testing.T) {
			req := ovr
			c.mod(&req)
			_, err := f.g.Override(ctx, req)
			wantCode(t, err, CodeOverrideUnavailable, c.msg)
		})
	}
	// The refusals wrote nothing.
	if n := len(f.history(id).Ledger); n != 0 {
		t.Fatalf("refused overrides wrote %d entries", n)
	}
	// A stale head: any mutation (here a refused transition) invalidates a
	// pending authorization.
	f.mustTransition(id, "draft", "review")
	_, err := f.g.Override(ctx, ovr)
	wantCode(t, err, CodeOverrideUnavailable, `"ledger_head":"`+f.history(id).Ledger[0].EntryDigest+`"`)

	// Sign the current payload: applied as a deviation.
	payload = f.authorizePayload(areq)
	ovr.Authorization = alice.sign(t, NamespaceOverride, payload)
	res, err := f.g.Override(ctx, ovr)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "deviation" || res.CurrentState != "review" || res.Rationale != areq.Rationale || !strings.HasPrefix(res.AuthorizedBy, "alice (SHA256:") || res.PayloadDigest == "" {
		t.Fatalf("override = %+v", res)
	}
	h := f.history(id)
	last := h.Ledger[len(h.Ledger)-1]
	if last.Outcome != "deviation" || last.Kind != "deviation" || last.ResolvedBy != "human" || last.Verdict != nil || last.IdempotencyKey != nil ||
		*last.Rationale != "authorized by "+res.AuthorizedBy+": "+areq.Rationale || h.CurrentState != "review" {
		t.Fatalf("deviation entry %+v", last)
	}
	// Spent: the same signature cannot be replayed.
	_, err = f.g.Override(ctx, ovr)
	wantCode(t, err, CodeOverrideUnavailable)

	// A valid signature still cannot leave the graph or use a stale state.
	sign := func(from, to string) OverrideRequest {
		p := f.authorizePayload(AuthorizeRequest{Kind: "override", ResourceID: id, FromState: from, ToState: to, Rationale: "r"})
		return OverrideRequest{ResourceID: id, FromState: from, ToState: to, Rationale: "r", Authorization: alice.sign(t, NamespaceOverride, p)}
	}
	_, err = f.g.Override(ctx, sign("review", "nowhere"))
	wantCode(t, err, CodeIllegalEdge)
	_, err = f.g.Override(ctx, sign("draft", "review"))
	wantCode(t, err, CodeStaleFromState)
	if vr, err := f.verify(id); err != nil || vr.CurrentState != "review" {
		t.Fatalf("verify: %+v %v", vr, err)
	}
}

func TestTrustRootStates(t *testing.T) {
	f := newFixture(t)
	alice := newKey(t, "alice", "ed25519")
	id := "t"
	f.register(f.featureRequest(id))
	payload := f.authorizePayload(AuthorizeRequest{Kind: "override", ResourceID: id, FromState: "draft", ToState: "review", Rationale: "r"})
	sig := alice.sign(t, NamespaceOverride, payload)
	req := OverrideRequest{ResourceID: id, FromState: "draft", ToState: "review", Rationale: "r", Authorization: sig}
	// The embedded trust root ships without signers.
	_, err := f.g.Override(context.Background(), req)
	wantCode(t, err, CodeOverrideUnavailable, "no signer")
	for name, root := range map[string]string{
		"option list":     "alice namespaces=\"x\" " + alice.pubLine + "\n",
		"non-ascii":       "# café\n" + alice.allowed("alice"),
		"rsa line":        alice.allowed("alice") + "bob ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ\n",
		"empty principal": alice.allowed("alice,"),
	} {
		t.Run(name, func(t *testing.T) {
			f.g.setTrust([]byte(root))
			_, err := f.g.Override(context.Background(), req)
			wantCode(t, err, CodeOverrideUnavailable, "trust root is unusable")
		})
	}
	f.g.setTrust([]byte(alice.allowed("alice")))
	if _, err := f.g.Override(context.Background(), req); err != nil {
		t.Fatal(err)
	}
}

func TestEmbeddedTrustRootShipsEmpty(t *testing.T) {
	g, err := New(Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	trust, err := g.trustRoot()
	if err != nil || trust.Len() != 0 {
		t.Fatalf("embedded trust root: %v, %d signers (must ship valid and empty)", err, trust.Len())
	}
}

func TestMigrate(t *testing.T) {
	f := newFixture(t)
	alice := newKey(t, "alice", "ed25519")
	f.g.setTrust([]byte(alice.allowed("alice")))
	id := "mig"
	f.register(f.featureRequest(id))
	f.write("plan.md", "")
	f.mustTransition(id, "draft", "review")
	ctx := context.Background()

	// Any valid policy, e.g. one that drops a predicate (an upgrade could not).
	newGraph := obj(t, `{"draft":["review"],"review":["done","draft"],"done":[]}`)
	newPreds := obj(t, `{"draft->review":[]}`)
	newTerminal := js(t, `["done"]`)
	areq := AuthorizeRequest{Kind: "migrate", ResourceID: id, Rationale: "drop the plan gate", NewGraph: newGraph, NewEdgePredicates: newPreds, NewTerminal: newTerminal}
	payload := f.authorizePayload(areq)
	mreq := MigrateRequest{ResourceID: id, NewGraph: newGraph, NewEdgePredicates: newPreds, NewTerminal: newTerminal, Rationale: areq.Rationale,
		Authorization: alice.sign(t, NamespaceMigrate, payload)}

	// The signature names the resulting checksum: another policy is refused.
	other := mreq
	other.NewEdgePredicates = obj(t, `{}`)
	_, err := f.g.Migrate(ctx, other)
	wantCode(t, err, CodeOverrideUnavailable, `"action":"migrate"`)
	// An override signature cannot be spent on a migrate.
	cross := mreq
	cross.Authorization = alice.sign(t, NamespaceOverride, payload)
	_, err = f.g.Migrate(ctx, cross)
	wantCode(t, err, CodeOverrideUnavailable, "namespace")
	blank := mreq
	blank.Rationale = ""
	_, err = f.g.Migrate(ctx, blank)
	wantCode(t, err, CodeOverrideUnavailable, "rationale")

	before := f.history(id)
	res, err := f.g.Migrate(ctx, mreq)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "migrated" || res.GraphVersion != 2 || !strings.HasPrefix(res.AuthorizedBy, "alice (SHA256:") || res.Rationale != areq.Rationale {
		t.Fatalf("%+v", res)
	}
	if !strings.Contains(string(payload), `"policy_checksum":"`+res.Checksum+`"`) {
		t.Fatalf("payload %s does not name checksum %s", payload, res.Checksum)
	}
	after := f.history(id)
	last := after.Ledger[len(after.Ledger)-1]
	if after.CurrentState != before.CurrentState || after.GraphVersion != 2 || last.Outcome != "graph_version" || last.Kind != "graph_version" ||
		last.FromState != "review" || last.ToState != "review" || last.ResolvedBy != "human" || !strings.HasPrefix(*last.Rationale, "authorized by alice (") {
		t.Fatalf("after migrate: %+v / %+v", after, last)
	}
	// Spent.
	_, err = f.g.Migrate(ctx, mreq)
	wantCode(t, err, CodeOverrideUnavailable)
	// The new policy is in force.
	if r := f.mustTransition(id, "review", "draft"); r.Status != "applied" {
		t.Fatal(r.Status)
	}
	if r := f.mustTransition(id, "draft", "review"); r.Status != "applied" {
		t.Fatal("the dropped predicate still applies")
	}

	// A migration that would strand the current state, after a valid
	// signature: invalid_state_name, nothing written.
	g2 := obj(t, `{"draft":["done"],"done":[]}`)
	p2 := f.authorizePayload(AuthorizeRequest{Kind: "migrate", ResourceID: id, Rationale: "x", NewGraph: g2, NewEdgePredicates: obj(t, `{}`)})
	_, err = f.g.Migrate(ctx, MigrateRequest{ResourceID: id, NewGraph: g2, NewEdgePredicates: obj(t, `{}`), Rationale: "x", Authorization: alice.sign(t, NamespaceMigrate, p2)})
	wantCode(t, err, CodeInvalidStateName, `"review"`)

	// Migrate is the repair tool: it works on a tampered registry.
	regPath := filepath.Join(f.dir(id), registryFile)
	reg, _ := os.ReadFile(regPath)
	os.WriteFile(regPath, []byte(strings.Replace(string(reg), `"review": [`, `"review": [ "draft", `, 1)), 0o600)
	_, err = f.transition(id, "review", "done")
	wantCode(t, err, CodeTampered)
	p3 := f.authorizePayload(AuthorizeRequest{Kind: "migrate", ResourceID: id, Rationale: "repair", NewGraph: newGraph, NewEdgePredicates: obj(t, `{}`), NewTerminal: newTerminal})
	if _, err := f.g.Migrate(ctx, MigrateRequest{ResourceID: id, NewGraph: newGraph, NewEdgePredicates: obj(t, `{}`), NewTerminal: newTerminal, Rationale: "repair",
		Authorization: alice.sign(t, NamespaceMigrate, p3)}); err != nil {
		t.Fatal(err)
	}
	if r := f.mustTransition(id, "review", "done"); r.Status != "applied" {
		t.Fatal(r.Status)
	}
}

func TestUpgrade(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	id := "up"
	base := f.featureRequest(id)
	f.register(base)
	up := func(graph, preds, terminal, stakes string) UpgradeRequest {
		return UpgradeRequest{ResourceID: id, NewGraph: obj(t, graph), NewEdgePredicates: obj(t, preds), NewTerminal: js(t, terminal), NewStakes: obj(t, stakes), Rationale: "grow"}
	}
	const (
		g0 = `{"draft":["review"],"review":["done","draft"],"done":[]}`
		p0 = `{"draft->review":[{"id":"plan","type":"deterministic","statement":"server_file_exists('plan.md')"}],"review->done":[{"statement":"server_file_contains('plan.md', 'approved')"}]}`
		t0 = `["done"]`
		s0 = `{"draft->review":"paranoid"}`
	)
	res, err := f.g.Upgrade(ctx, up(g0, p0, t0, s0))
	if err != nil || res.Status != "unchanged" || res.GraphVersion != 1 || res.LedgerRef != "" {
		t.Fatalf("unchanged: %+v %v", res, err)
	}
	refusals := []struct {
		name                      string
		graph, preds, term, stake string
		reasons                   []string
	}{
		{"state removed", `{"draft":["review"],"review":["done"]}`, p0, t0, s0, []string{`state "done" removed`, `edge "review->draft" removed`}},
		{"edge removed", `{"draft":["review"],"review":["done"],"done":[]}`, p0, t0, s0, []string{`edge "review->draft" removed`}},
		{"predicate added", g0, `{"draft->review":[{"id":"plan","type":"deterministic","statement":"server_file_exists('plan.md')"},{"statement":"server_file_exists('x')"}],"review->done":[{"statement":"server_file_contains('plan.md', 'approved')"}]}`, t0, s0, []string{`predicates of existing edge "draft->review" changed`}},
		{"predicate removed", g0, `{"draft->review":[{"id":"plan","type":"deterministic","statement":"server_file_exists('plan.md')"}]}`, t0, s0, []string{`predicates of existing edge "review->done" changed`}},
		{"absent becomes empty", g0, `{"draft->review":[{"id":"plan","type":"deterministic","statement":"server_file_exists('plan.md')"}],"review->done":[{"statement":"server_file_contains('plan.md', 'approved')"}],"review->draft":[]}`, t0, s0, []string{`"review->draft" changed`}},
		{"stake changed", g0, p0, t0, `{"draft->review":"paranoid","review->done":"cheap"}`, []string{`stake of existing edge "review->done" changed`}},
		{"stake weakened", g0, p0, t0, `{"draft->review":"cheap"}`, []string{`stake of existing edge "draft->review" changed`}},
		{"new route into old state", `{"draft":["review","done"],"review":["done","draft"],"done":[]}`, p0, t0, s0, []string{`new edge "draft->done" leads into existing state "done"`}},
		{"edge out of terminal", `{"draft":["review"],"review":["done","draft"],"done":["archived"]}`, p0, t0, s0, []string{`new edge "done->archived" leaves terminal state "done"`}},
		{"terminal added", `{"draft":["review","parked"],"review":["done","draft"],"done":[],"parked":[]}`, p0, `["done","parked"]`, s0, []string{`terminal state "parked" added`}},
		{"terminal removed", g0, p0, `[]`, s0, []string{`terminal state "done" removed`}},
		{"several at once", `{"draft":["review","done"],"review":["done"],"done":[]}`, p0, `[]`, `{}`, []string{"removed", "stake of existing edge", "leads into existing state", "terminal state"}},
	}
	for _, c := range refusals {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.g.Upgrade(ctx, up(c.graph, c.preds, c.term, c.stake))
			wantCode(t, err, CodeIncompatibleUpgrade, c.reasons...)
		})
	}
	// Validation still applies (a paranoid new edge without evidence).
	_, err = f.g.Upgrade(ctx, up(`{"draft":["review","x"],"review":["done","draft"],"done":[],"x":[]}`, p0, t0, `{"draft->review":"paranoid","draft->x":"paranoid"}`))
	wantCode(t, err, CodeParanoidNeedsTrustedEvidence)
	_, err = f.g.Upgrade(ctx, UpgradeRequest{ResourceID: id, NewGraph: obj(t, g0), NewEdgePredicates: obj(t, p0), Rationale: " "})
	wantCode(t, err, CodeOverrideUnavailable)

	// Allowed: new states, edges from old non-terminal states into them,
	// edges among new states, predicates and stakes on new edges.
	grown := up(`{"draft":["review","parked"],"review":["done","draft","blocked"],"done":[],"parked":["blocked"],"blocked":[]}`,
		`{"draft->review":[{"id":"plan","type":"deterministic","statement":"server_file_exists('plan.md')"}],"review->done":[{"statement":"server_file_contains('plan.md', 'approved')"}],"draft->parked":[{"statement":"server_file_exists('PARK')"}]}`,
		t0, `{"draft->review":"paranoid","draft->parked":"paranoid","parked->blocked":"cheap"}`)
	res, err = f.g.Upgrade(ctx, grown)
	if err != nil || res.Status != "migrated" || res.GraphVersion != 2 || res.LedgerRef == "" || res.AuthorizedBy != "" {
		t.Fatalf("grow: %+v %v", res, err)
	}
	h := f.history(id)
	last := h.Ledger[len(h.Ledger)-1]
	if last.ResolvedBy != "agent" || *last.Rationale != "grow" || last.Outcome != "graph_version" || h.CurrentState != "draft" {
		t.Fatalf("upgrade entry %+v", last)
	}
	if r := f.mustTransition(id, "draft", "parked"); r.Status != "refused" {
		t.Fatal("new edge predicate not enforced")
	}
	// A tampered registry is never blessed as unchanged.
	regPath := filepath.Join(f.dir(id), registryFile)
	reg, _ := os.ReadFile(regPath)
	os.WriteFile(regPath, []byte(strings.Replace(string(reg), `"server_file_exists('PARK')"`, `"server_file_exists('plan.md')"`, 1)), 0o600)
	_, err = f.g.Upgrade(ctx, grown)
	wantCode(t, err, CodeTampered)

	// "Existing keys" include edge_predicates and stakes keys that name no
	// edge of the graph (docs/guard.md, "Additive-only upgrades", rule 2):
	// they too are frozen.
	f.register(RegisterRequest{ResourceID: "keys", Graph: obj(t, `{"a":["b"],"b":[]}`), Initial: "a",
		EdgePredicates: obj(t, `{"x->y":[{"statement":"verdict_receipt_clean('z')"}]}`), Stakes: obj(t, `{"q->r":"cheap"}`)})
	_, err = f.g.Upgrade(ctx, UpgradeRequest{ResourceID: "keys", NewGraph: obj(t, `{"a":["b","c"],"b":[],"c":[]}`), NewEdgePredicates: obj(t, `{}`), Rationale: "r"})
	wantCode(t, err, CodeIncompatibleUpgrade, `predicates of existing edge "x->y" changed`, `stake of existing edge "q->r" changed`)
	res, err = f.g.Upgrade(ctx, UpgradeRequest{ResourceID: "keys", NewGraph: obj(t, `{"a":["b","c"],"b":[],"c":[]}`),
		NewEdgePredicates: obj(t, `{"x->y":[{"statement":"verdict_receipt_clean('z')"}]}`), NewStakes: obj(t, `{"q->r":"cheap"}`), Rationale: "r"})
	if err != nil || res.Status != "migrated" {
		t.Fatalf("keys kept: %+v %v", res, err)
	}
}

func TestApplyUpgrade(t *testing.T) {
	f := newFixture(t)
	alice := newKey(t, "alice", "ed25519")
	bob := newKey(t, "bob", "ed25519")
	f.g.setTrust([]byte(alice.allowed("alice")))
	ctx := context.Background()
	id := "fleet:1"
	from := f.register(f.featureRequest(id)).Checksum
	f.register(RegisterRequest{ResourceID: "fleet:other", Graph: obj(t, `{"a":[]}`), Initial: "a", EdgePredicates: obj(t, `{}`)})

	descDir := t.TempDir()
	path := filepath.Join(descDir, "upgrades.json")
	// The reviewed target: drop the paranoid plan gate entirely (an upgrade
	// could never do this).
	content := `{"version": 1, "descriptors": [
  {"id": "v2-relax", "rationale": "plan gate moved to CI", "from_checksum": "` + from + `",
   "to_policy": {"graph": {"draft":["review"],"review":["done","draft"],"done":[]}, "edge_predicates": {}, "terminal": ["done"], "stakes": {}}},
  {"id": "v2-strand", "rationale": "bad one", "from_checksum": "` + from + `",
   "to_policy": {"graph": {"review":["done"],"done":[]}, "edge_predicates": {}, "terminal": ["done"], "stakes": {}}}
]}`
	install := func(data string, signer sshKey, ns string) {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chmod(path, 0o600)
		os.WriteFile(path+".sig", []byte(signer.sign(t, ns, []byte(data))), 0o600)
	}
	apply := func(descID string) (*ApplyUpgradeResult, error) {
		return f.g.ApplyUpgrade(ctx, ApplyUpgradeRequest{ResourceID: id, DescriptorID: descID})
	}

	// Not configured.
	_, err := apply("v2-relax")
	wantCode(t, err, CodeDescriptorUnavailable, "not set")
	f.env[EnvUpgradeDescriptors] = "relative/upgrades.json"
	_, err = apply("v2-relax")
	wantCode(t, err, CodeDescriptorUnavailable, "absolute")
	f.env[EnvUpgradeDescriptors] = path
	_, err = apply("v2-relax")
	wantCode(t, err, CodeDescriptorUnavailable, "not readable")
	// Unavailable before the resource is even looked at.
	install(content, alice, NamespaceDescriptors)
	os.Remove(path + ".sig")
	_, err = f.g.ApplyUpgrade(ctx, ApplyUpgradeRequest{ResourceID: "no-such-resource", DescriptorID: "v2-relax"})
	wantCode(t, err, CodeDescriptorUnavailable, "not signed")
	install(content, bob, NamespaceDescriptors)
	_, err = apply("v2-relax")
	wantCode(t, err, CodeDescriptorUnavailable, "not in the trust root")
	// Nothing of an unauthenticated file is interpreted: a schema error in
	// an unsigned or untrusted file is reported as the signature failure.
	install(`{"version": 2}`, bob, NamespaceDescriptors)
	_, err = apply("v2-relax")
	wantCode(t, err, CodeDescriptorUnavailable, "not in the trust root")
	os.Remove(path + ".sig")
	_, err = apply("v2-relax")
	wantCode(t, err, CodeDescriptorUnavailable, "not signed")
	// A signature file is read only up to a bound.
	install(content, alice, NamespaceDescriptors)
	os.WriteFile(path+".sig", []byte(strings.Repeat("A", maxSignatureFile+1)), 0o600)
	_, err = apply("v2-relax")
	wantCode(t, err, CodeDescriptorUnavailable, "not signed", "larger than")
	install(content, alice, NamespaceOverride)
	_, err = apply("v2-relax")
	wantCode(t, err, CodeDescriptorUnavailable, "namespace")
	install(content, alice, NamespaceDescriptors)
	os.WriteFile(path, []byte(strings.Replace(content, "CI", "ci", 1)), 0o600) // edited after signing
	_, err = apply("v2-relax")
	wantCode(t, err, CodeDescriptorUnavailable, "signature rejected")
	install(content, alice, NamespaceDescriptors)
	os.Chmod(path, 0o620)
	_, err = apply("v2-relax")
	wantCode(t, err, CodeDescriptorUnavailable, "writable")
	os.Chmod(path, 0o600)
	_, err = apply("v3")
	wantCode(t, err, CodeDescriptorUnavailable, `"v3"`)
	f.g.setTrust(nil)
	_, err = apply("v2-relax")
	wantCode(t, err, CodeDescriptorUnavailable)
	f.g.setTrust([]byte(alice.allowed("alice")))

	// A valid descriptor on a never-registered id: guard_not_found, and
	// nothing is created.
	_, err = f.g.ApplyUpgrade(ctx, ApplyUpgradeRequest{ResourceID: "never:registered", DescriptorID: "v2-relax"})
	wantCode(t, err, CodeNotFound)
	if _, err := os.Stat(f.dir("never:registered")); !os.IsNotExist(err) {
		t.Fatal("apply_upgrade on an unknown id created its directory")
	}
	// Wrong source policy.
	_, err = f.g.ApplyUpgrade(ctx, ApplyUpgradeRequest{ResourceID: "fleet:other", DescriptorID: "v2-relax"})
	wantCode(t, err, CodeDescriptorMismatch, from)
	// Authorized is not well formed: the stranding descriptor fails
	// validation (initial "draft" is no longer a node).
	_, err = apply("v2-strand")
	wantCode(t, err, CodeInvalidStateName)

	res, err := apply("v2-relax")
	if err != nil || res.Status != "applied" || res.GraphVersion != 2 || res.DescriptorID != "v2-relax" || res.LedgerRef == "" {
		t.Fatalf("apply: %+v %v", res, err)
	}
	h := f.history(id)
	last := h.Ledger[len(h.Ledger)-1]
	data, _ := os.ReadFile(path)
	sum := sha256hex(data)
	if last.ResolvedBy != "human" || !strings.HasPrefix(*last.Rationale, "descriptor v2-relax signed by alice (SHA256:") || !strings.Contains(*last.Rationale, "file sha256 "+sum+"): plan gate moved to CI") {
		t.Fatalf("entry %+v", *last.Rationale)
	}
	// Re-running is unchanged (destination checked before source).
	res, err = apply("v2-relax")
	if err != nil || res.Status != "unchanged" || res.GraphVersion != 2 {
		t.Fatalf("re-apply: %+v %v", res, err)
	}
	if r := f.mustTransition(id, "draft", "review"); r.Status != "applied" {
		t.Fatal("the relaxed policy is not in force")
	}

	// The operator report.
	rep, err := f.g.Descriptors(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != "ok" || rep.Path != path || rep.SHA256 != sum || rep.GroupOrWorldWritable || rep.SignaturePath != path+".sig" ||
		!strings.HasPrefix(rep.Signature, "verified: signed by alice (SHA256:") || len(rep.AllowedSigners) != 1 || rep.AllowedSigners[0].Principal != "alice" ||
		len(rep.Descriptors) != 2 || rep.Descriptors[0].ID != "v2-relax" || rep.Descriptors[0].FromChecksum != from {
		t.Fatalf("descriptors %+v", rep)
	}
	install(content, bob, NamespaceDescriptors)
	os.Chmod(path, 0o666)
	rep, err = f.g.Descriptors(ctx)
	if err != nil || !strings.HasPrefix(rep.Signature, "NOT VERIFIED: signature rejected") || !rep.GroupOrWorldWritable {
		t.Fatalf("descriptors with a bad signature: %+v %v", rep, err)
	}
	os.WriteFile(path, []byte(`{"version":2,"descriptors":[]}`), 0o600)
	_, err = f.g.Descriptors(ctx)
	wantCode(t, err, CodeDescriptorUnavailable, "version")
}

func TestParseDescriptors(t *testing.T) {
	sum := strings.Repeat("a", 64)
	pol := `{"graph":{},"edge_predicates":{},"terminal":[],"stakes":{}}`
	d := func(fields string) string { return `{"version":1,"descriptors":[` + fields + `]}` }
	good := `{"id":"x","rationale":"r","from_checksum":"` + sum + `","to_policy":` + pol + `}`
	if ds, err := parseDescriptors([]byte(d(good))); err != nil || len(ds) != 1 {
		t.Fatalf("%v", err)
	}
	bad := map[string]string{
		"not object":       `[]`,
		"extra top key":    `{"version":1,"descriptors":[],"x":1}`,
		"missing key":      `{"version":1}`,
		"version 2":        `{"version":2,"descriptors":[]}`,
		"version string":   `{"version":"1","descriptors":[]}`,
		"descriptors obj":  `{"version":1,"descriptors":{}}`,
		"extra key":        d(`{"id":"x","rationale":"r","from_checksum":"` + sum + `","to_policy":` + pol + `,"note":1}`),
		"bad id":           d(`{"id":"x y","rationale":"r","from_checksum":"` + sum + `","to_policy":` + pol + `}`),
		"blank rationale":  d(`{"id":"x","rationale":"  ","from_checksum":"` + sum + `","to_policy":` + pol + `}`),
		"upper checksum":   d(`{"id":"x","rationale":"r","from_checksum":"` + strings.Repeat("A", 64) + `","to_policy":` + pol + `}`),
		"short checksum":   d(`{"id":"x","rationale":"r","from_checksum":"abc","to_policy":` + pol + `}`),
		"policy extra key": d(`{"id":"x","rationale":"r","from_checksum":"` + sum + `","to_policy":{"graph":{},"edge_predicates":{},"terminal":[],"stakes":{},"initial":"a"}}`),
		"policy missing":   d(`{"id":"x","rationale":"r","from_checksum":"` + sum + `","to_policy":{"graph":{},"edge_predicates":{},"terminal":[]}}`),
		"terminal object":  d(`{"id":"x","rationale":"r","from_checksum":"` + sum + `","to_policy":{"graph":{},"edge_predicates":{},"terminal":{},"stakes":{}}}`),
		"duplicate id":     d(good + "," + good),
	}
	for name, text := range bad {
		if _, err := parseDescriptors([]byte(text)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
