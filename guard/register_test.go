package guard

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/guard/internal/canon"
)

// TestChecksumVectorViaRegister registers the policy of the reference's
// checksum vector (TestChecksumVector in guard/internal/canon).
func TestChecksumVectorViaRegister(t *testing.T) {
	f := newFixture(t)
	ws := f.ws
	res := f.register(RegisterRequest{
		ResourceID: "vector",
		Graph:      obj(t, `{"draft":["review","done"],"review":["done"],"done":[]}`),
		EdgePredicates: obj(t, `{"draft->review":[{"id":"p1","type":"deterministic","statement":"server_file_exists('café.txt')"},
			{"id":"p2","type":"verified","statement":"review is complete"}],"review->done":[]}`),
		Initial: "draft", Terminal: js(t, `["review","done"]`), // order must not matter
		Stakes:        obj(t, `{"draft->review":"paranoid","review->done":"cheap"}`),
		WorkspaceRoot: &ws,
	})
	if want := "ed561645bb10c77a488a62f7976cefcfb714f2bd7610ff116d9b75d4669df9e8"; res.Checksum != want || res.Status != "registered" || res.GuardID != "vector" {
		t.Fatalf("register = %+v, want checksum %s", res, want)
	}
}

func TestDirName(t *testing.T) {
	if got := DirName("project:δ"); got != "5fea8fdb812a07ff567431a7cc56a280" {
		t.Fatalf("DirName = %s", got)
	}
}

func TestRegisterStoresPrettyCanonicalRegistry(t *testing.T) {
	f := newFixture(t)
	req := f.featureRequest("compose:FEAT-1")
	res := f.register(req)
	dir := f.dir("compose:FEAT-1")
	data, err := os.ReadFile(filepath.Join(dir, registryFile))
	if err != nil {
		t.Fatal(err)
	}
	v, err := canon.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	pretty, _ := canon.MarshalIndent(v)
	if string(pretty) != string(data) {
		t.Fatalf("registry.json is not pretty canonical:\n%s", data)
	}
	m := v.(map[string]any)
	if m["checksum"] != res.Checksum || m["graph_version"] != 1.0 || m["current_state"] != "draft" || m["workspace_root"] != f.ws || m["resource_id"] != "compose:FEAT-1" {
		t.Fatalf("registry = %s", data)
	}
	if fi, _ := os.Stat(filepath.Join(dir, registryFile)); fi.Mode().Perm() != 0o600 {
		t.Fatalf("registry mode %v", fi.Mode().Perm())
	}
	marker, _ := os.ReadFile(filepath.Join(dir, markerFile))
	if !strings.HasPrefix(string(marker), `{"owner":"go","registry_seal":1,"since":"`) || !strings.HasSuffix(string(marker), "Z\"}\n") {
		t.Fatalf("engine.json = %q", marker)
	}
	if _, err := os.Stat(filepath.Join(dir, ledgerFile)); !os.IsNotExist(err) {
		t.Fatal("registration must not write a ledger entry")
	}
	// Same policy again (map order is irrelevant): exists, nothing written.
	before, _ := os.ReadFile(filepath.Join(dir, registryFile))
	again := f.register(f.featureRequest("compose:FEAT-1"))
	if again.Status != "exists" || again.Checksum != res.Checksum {
		t.Fatalf("re-register = %+v", again)
	}
	after, _ := os.ReadFile(filepath.Join(dir, registryFile))
	if string(before) != string(after) {
		t.Fatal("re-registering rewrote the registry")
	}
	// A different policy: refused.
	weaker := f.featureRequest("compose:FEAT-1")
	weaker.EdgePredicates = obj(t, `{"draft->review":[{"statement":"server_file_exists('other.md')"}]}`)
	_, err = f.g.Register(context.Background(), weaker)
	wantCode(t, err, CodeAlreadyRegistered)
	// initial and workspace_root are not part of the reference's checksum,
	// but they are part of the registration (sealed): another value is
	// refused, not "exists" (which would let a caller believe it took).
	other := f.featureRequest("compose:FEAT-1")
	other.Initial = "review"
	_, err = f.g.Register(context.Background(), other)
	wantCode(t, err, CodeAlreadyRegistered, `initial state "draft"`)
	elsewhere := f.featureRequest("compose:FEAT-1")
	ws2 := filepath.Join(f.tmp, "ws2")
	os.Mkdir(ws2, 0o700)
	elsewhere.WorkspaceRoot = &ws2
	_, err = f.g.Register(context.Background(), elsewhere)
	wantCode(t, err, CodeAlreadyRegistered, "workspace_root")
	// The registry is sealed: registered checksum, ledger head, seal.
	if m["seal_version"] != 1.0 || m["registered_checksum"] != res.Checksum || m["ledger_entries"] != 0.0 || m["ledger_head"] != "" || m["ledger_pending"] != nil {
		t.Fatalf("registry not sealed as registered: %s", data)
	}
	if seal, _ := sealOf(m); seal != m["seal"] {
		t.Fatalf("seal %v, recomputed %s", m["seal"], seal)
	}
}

func TestRegisterValidationOrder(t *testing.T) {
	f := newFixture(t)
	ws := f.ws
	relative := "relative/dir"
	missing := filepath.Join(f.ws, "missing")
	file := filepath.Join(f.ws, "file")
	f.write("file", "x")
	base := func() RegisterRequest {
		return RegisterRequest{
			ResourceID:     "r",
			Graph:          obj(t, `{"a":["b"],"b":[]}`),
			EdgePredicates: obj(t, `{}`),
			Initial:        "a",
		}
	}
	cases := []struct {
		name string
		mod  func(*RegisterRequest)
		code Code
		msg  string
	}{
		{"terminal not array", func(r *RegisterRequest) { r.Terminal = "b" }, CodeInvalidStateName, "terminal"},
		{"terminal non-string", func(r *RegisterRequest) { r.Terminal = js(t, `["b",1]`) }, CodeInvalidStateName, "terminal"},
		{"terminal duplicate", func(r *RegisterRequest) { r.Terminal = js(t, `["b","b"]`) }, CodeInvalidStateName, "more than once"},
		{"terminal before graph", func(r *RegisterRequest) {
			r.Terminal = js(t, `["b","b"]`)
			r.Graph = obj(t, `{"a":"b"}`)
		}, CodeInvalidStateName, "more than once"},
		{"graph bare string", func(r *RegisterRequest) { r.Graph = obj(t, `{"a":"b"}`) }, CodeInvalidStateName, `graph["a"]`},
		{"graph before predicates", func(r *RegisterRequest) {
			r.Graph = obj(t, `{"a":[1]}`)
			r.EdgePredicates = obj(t, `{"a->b":"x"}`)
		}, CodeInvalidStateName, "graph"},
		{"predicates not array", func(r *RegisterRequest) { r.EdgePredicates = obj(t, `{"a->b":{"statement":"x"}}`) }, CodeEvidenceParseError, "array"},
		{"predicate not object", func(r *RegisterRequest) { r.EdgePredicates = obj(t, `{"a->b":["x"]}`) }, CodeEvidenceParseError, "predicate object"},
		{"predicates before stakes", func(r *RegisterRequest) {
			r.EdgePredicates = obj(t, `{"a->b":["x"]}`)
			r.Stakes = obj(t, `{"a->b":1}`)
		}, CodeEvidenceParseError, ""},
		{"stake not string", func(r *RegisterRequest) { r.Stakes = obj(t, `{"a->b":1}`) }, CodeInvalidStateName, "stakes"},
		{"stakes not object", func(r *RegisterRequest) { r.Stakes = js(t, `["paranoid"]`) }, CodeInvalidStateName, "stakes must be an object"},
		{"stakes before names", func(r *RegisterRequest) {
			r.Stakes = obj(t, `{"a->b":null}`)
			r.Graph = obj(t, `{"a b":["b"]}`)
		}, CodeInvalidStateName, "stakes"},
		{"bad key name", func(r *RegisterRequest) { r.Graph = obj(t, `{"a":["b"],"b c":[]}`) }, CodeInvalidStateName, `"b c"`},
		{"bad target name", func(r *RegisterRequest) { r.Graph = obj(t, `{"a":["b/c"]}`) }, CodeInvalidStateName, `"b/c"`},
		{"reserved name", func(r *RegisterRequest) { r.Graph = obj(t, `{"a":["__proto__"]}`) }, CodeInvalidStateName, "__proto__"},
		{"reserved constructor", func(r *RegisterRequest) { r.Terminal = js(t, `["constructor"]`) }, CodeInvalidStateName, "constructor"},
		{"non-ascii name", func(r *RegisterRequest) { r.Graph = obj(t, `{"a":["é"]}`) }, CodeInvalidStateName, ""},
		{"empty initial", func(r *RegisterRequest) { r.Initial = "" }, CodeInvalidStateName, `""`},
		{"initial only a target", func(r *RegisterRequest) { r.Graph = obj(t, `{"a":["b"]}`); r.Initial = "b" }, CodeInvalidStateName, "initial"},
		{"initial terminal ok but unknown type", func(r *RegisterRequest) {
			r.Graph = obj(t, `{"a":["b"]}`)
			r.Terminal = js(t, `["b"]`)
			r.Initial = "b"
			r.EdgePredicates = obj(t, `{"a->b":[{"type":"magic","statement":"x"}]}`)
		}, CodeEvidenceParseError, `"magic"`},
		{"null type", func(r *RegisterRequest) { r.EdgePredicates = obj(t, `{"a->b":[{"type":null,"statement":"x"}]}`) }, CodeEvidenceParseError, "null"},
		{"numeric type", func(r *RegisterRequest) { r.EdgePredicates = obj(t, `{"a->b":[{"type":3,"statement":"x"}]}`) }, CodeEvidenceParseError, "3"},
		{"bad statement", func(r *RegisterRequest) { r.EdgePredicates = obj(t, `{"a->b":[{"statement":"eval('1')"}]}`) }, CodeEvidenceParseError, "unknown trusted builtin"},
		{"non-string statement", func(r *RegisterRequest) { r.EdgePredicates = obj(t, `{"a->b":[{"statement":5}]}`) }, CodeEvidenceParseError, ""},
		{"commands disabled", func(r *RegisterRequest) {
			r.EdgePredicates = obj(t, `{"a->b":[{"statement":"command_exit_zero(['true'])"}]}`)
			r.WorkspaceRoot = &ws
		}, CodeCommandExecutionDisabled, "STRATUM_GUARD_ALLOW_COMMANDS"},
		{"commands before workspace", func(r *RegisterRequest) {
			r.EdgePredicates = obj(t, `{"a->b":[{"statement":"command_exit_zero(['true'])"}]}`)
		}, CodeCommandExecutionDisabled, ""},
		{"needs workspace", func(r *RegisterRequest) {
			r.EdgePredicates = obj(t, `{"a->b":[{"statement":"git_commit_exists('HEAD')"}]}`)
		}, CodeInvalidWorkspaceRoot, "needs a workspace_root"},
		{"contains needs workspace", func(r *RegisterRequest) {
			r.EdgePredicates = obj(t, `{"a->b":[{"statement":"server_file_contains('a','b')"}]}`)
		}, CodeInvalidWorkspaceRoot, ""},
		{"relative workspace", func(r *RegisterRequest) { r.WorkspaceRoot = &relative }, CodeInvalidWorkspaceRoot, "absolute"},
		{"missing workspace", func(r *RegisterRequest) { r.WorkspaceRoot = &missing }, CodeInvalidWorkspaceRoot, "existing directory"},
		{"file workspace", func(r *RegisterRequest) { r.WorkspaceRoot = &file }, CodeInvalidWorkspaceRoot, "existing directory"},
		{"paranoid only llm", func(r *RegisterRequest) {
			r.EdgePredicates = obj(t, `{"a->b":[{"type":"judged","statement":"looks good"}]}`)
			r.Stakes = obj(t, `{"a->b":"paranoid"}`)
		}, CodeParanoidNeedsTrustedEvidence, `"a->b"`},
		{"paranoid empty list", func(r *RegisterRequest) {
			r.EdgePredicates = obj(t, `{"a->b":[]}`)
			r.Stakes = obj(t, `{"a->b":"paranoid"}`)
		}, CodeParanoidNeedsTrustedEvidence, ""},
		// The reference's gap, closed: no edge_predicates entry at all.
		{"paranoid without entry", func(r *RegisterRequest) { r.Stakes = obj(t, `{"a->b":"paranoid"}`) }, CodeParanoidNeedsTrustedEvidence, `"a->b"`},
		{"workspace before paranoid", func(r *RegisterRequest) {
			r.Stakes = obj(t, `{"a->b":"paranoid"}`)
			r.WorkspaceRoot = &missing
		}, CodeInvalidWorkspaceRoot, ""},
		{"float in predicate", func(r *RegisterRequest) {
			r.EdgePredicates = obj(t, `{"a->b":[{"type":"judged","statement":"x","weight":0.5}]}`)
		}, CodeEvidenceParseError, "canonical"},
		{"empty resource id", func(r *RegisterRequest) { r.ResourceID = "" }, CodeInvalidArgument, "resource_id"},
		{"dot resource id", func(r *RegisterRequest) { r.ResourceID = ".." }, CodeInvalidArgument, "resource_id"},
		{"nul resource id", func(r *RegisterRequest) { r.ResourceID = "a\x00b" }, CodeInvalidArgument, "NUL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := base()
			c.mod(&req)
			_, err := f.g.Register(context.Background(), req)
			wantCode(t, err, c.code, c.msg)
		})
	}
	// Nothing was created by refused registrations.
	if _, err := os.Stat(f.root); !os.IsNotExist(err) {
		t.Fatalf("refused registrations created the store: %v", err)
	}
	// Accepted variants.
	ok := []func(*RegisterRequest){
		func(r *RegisterRequest) { r.Stakes = obj(t, `{"a->b":"high","x->y":"cheap"}`) },
		func(r *RegisterRequest) {
			r.EdgePredicates = obj(t, `{"a->b":[{"type":"verified","statement":5}],"not->an-edge":[]}`)
		},
		func(r *RegisterRequest) {
			r.EdgePredicates = obj(t, `{"a->b":[{"statement":"verdict_receipt_clean('x')"}]}`)
			r.Stakes = obj(t, `{"a->b":"paranoid"}`)
		}, // receipts need no workspace
		func(r *RegisterRequest) { r.Graph = obj(t, `{"a":["a"]}`) },
	}
	for i, mod := range ok {
		req := base()
		req.ResourceID = "ok" + string(rune('0'+i))
		mod(&req)
		if _, err := f.g.Register(context.Background(), req); err != nil {
			t.Errorf("variant %d: %v", i, err)
		}
	}
	// Commands allowed with the opt-in.
	f.env[EnvAllowCommands] = "1"
	req := base()
	req.ResourceID = "cmd"
	req.EdgePredicates = obj(t, `{"a->b":[{"statement":"command_exit_zero(['true'])"}]}`)
	req.WorkspaceRoot = &ws
	if _, err := f.g.Register(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	f.env[EnvAllowCommands] = "true"
	req.ResourceID = "cmd2"
	_, err := f.g.Register(context.Background(), req)
	wantCode(t, err, CodeCommandExecutionDisabled)
}

// TestUnregisteredLeavesNothing: every mutation of a never-registered id
// is guard_not_found and creates nothing (neither the store root nor the
// resource directory), so a later registration works.
func TestUnregisteredLeavesNothing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	id := "never:registered"
	checks := map[string]func() error{
		"transition": func() error { _, err := f.transition(id, "draft", "review"); return err },
		"override": func() error {
			_, err := f.g.Override(ctx, OverrideRequest{ResourceID: id, FromState: "a", ToState: "b", Authorization: "x", Rationale: "r"})
			return err
		},
		"migrate": func() error {
			_, err := f.g.Migrate(ctx, MigrateRequest{ResourceID: id, NewGraph: map[string]any{}, NewEdgePredicates: map[string]any{}, Authorization: "x", Rationale: "r"})
			return err
		},
		"upgrade": func() error {
			_, err := f.g.Upgrade(ctx, UpgradeRequest{ResourceID: id, NewGraph: map[string]any{}, NewEdgePredicates: map[string]any{}, Rationale: "r"})
			return err
		},
		"history": func() error { _, err := f.g.History(ctx, HistoryRequest{ResourceID: id}); return err },
		"verify":  func() error { _, err := f.verify(id); return err },
	}
	leftBehind := func(stage string) {
		t.Helper()
		for name, c := range checks {
			if err := c(); CodeOf(err) != CodeNotFound {
				t.Errorf("%s, %s: %v, want guard_not_found", stage, name, err)
			}
		}
		// authorize is read-only: a missing resource has the empty head.
		if res, err := f.g.Authorize(ctx, AuthorizeRequest{Kind: "override", ResourceID: id, FromState: "a", ToState: "b", Rationale: "r"}); err != nil ||
			!strings.Contains(res.Payload, `"ledger_head":""`) {
			t.Errorf("%s, authorize: %+v %v", stage, res, err)
		}
		if _, err := os.Stat(f.dir(id)); !os.IsNotExist(err) {
			t.Fatalf("%s: a directory was left behind for %s", stage, id)
		}
	}
	leftBehind("empty store")
	if _, err := os.Stat(f.root); !os.IsNotExist(err) {
		t.Fatalf("operations on an unknown id created the store root: %v", err)
	}
	// Again with the store root existing (another resource registered).
	f.register(f.featureRequest("other"))
	leftBehind("populated store")
	if r := f.register(f.featureRequest(id)); r.Status != "registered" {
		t.Fatalf("register after refusals: %+v", r)
	}
}

func TestOwnership(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// A directory written by the TypeScript engine.
	f.register(f.featureRequest("ts-owned"))
	os.WriteFile(filepath.Join(f.dir("ts-owned"), markerFile), []byte(`{"owner":"ts","since":"2025-01-01T00:00:00.000Z"}`+"\n"), 0o600)
	_, err := f.transition("ts-owned", "draft", "review")
	wantCode(t, err, CodeEngineOwned, `"ts"`)
	_, err = f.g.Register(ctx, f.featureRequest("ts-owned"))
	wantCode(t, err, CodeEngineOwned)
	// Reads ignore the marker.
	if _, err := f.g.History(ctx, HistoryRequest{ResourceID: "ts-owned"}); err != nil {
		t.Fatal(err)
	}
	// A registry with no marker (a legacy store): refused for mutation.
	f.register(f.featureRequest("legacy"))
	os.Remove(filepath.Join(f.dir("legacy"), markerFile))
	_, err = f.transition("legacy", "draft", "review")
	wantCode(t, err, CodeEngineOwned)
	_, err = f.g.Register(ctx, f.featureRequest("legacy"))
	wantCode(t, err, CodeEngineOwned)
	// A malformed marker reads as no owner.
	os.WriteFile(filepath.Join(f.dir("legacy"), markerFile), []byte("{not json"), 0o600)
	_, err = f.transition("legacy", "draft", "review")
	wantCode(t, err, CodeEngineOwned)
	// An empty directory (an interrupted registration) is claimed.
	os.MkdirAll(f.dir("empty"), 0o755)
	if r := f.register(f.featureRequest("empty")); r.Status != "registered" {
		t.Fatalf("%+v", r)
	}
}

func TestRegistryLoadFailures(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.register(f.featureRequest("a"))
	regPath := filepath.Join(f.dir("a"), registryFile)
	good, _ := os.ReadFile(regPath)

	// Another id in the hashed directory.
	os.WriteFile(regPath, []byte(strings.Replace(string(good), `"resource_id": "a"`, `"resource_id": "b"`, 1)), 0o600)
	_, err := f.g.History(ctx, HistoryRequest{ResourceID: "a"})
	wantCode(t, err, CodeResourceIDMismatch, `"b"`)

	// Invalid JSON reads as absent.
	os.WriteFile(regPath, []byte("{torn"), 0o600)
	_, err = f.g.History(ctx, HistoryRequest{ResourceID: "a"})
	wantCode(t, err, CodeNotFound)

	// A policy edited without its checksum: tampered (transition), but
	// history still reads.
	os.WriteFile(regPath, []byte(strings.Replace(string(good), `"server_file_exists('plan.md')"`, `"server_file_exists('README')"`, 1)), 0o600)
	_, err = f.transition("a", "draft", "review")
	wantCode(t, err, CodeTampered)
	if _, err := f.g.History(ctx, HistoryRequest{ResourceID: "a"}); err != nil {
		t.Fatal(err)
	}
	_, err = f.verify("a")
	wantCode(t, err, CodeTampered)

	// A structurally broken registry.
	os.WriteFile(regPath, []byte(strings.Replace(string(good), `"initial": "draft"`, `"initial": 5`, 1)), 0o600)
	_, err = f.g.History(ctx, HistoryRequest{ResourceID: "a"})
	wantCode(t, err, CodeTampered, "initial")

	// Registry removed while a ledger exists: refused, not re-registrable.
	os.WriteFile(regPath, good, 0o600)
	f.write("plan.md", "x")
	f.mustTransition("a", "draft", "review")
	os.Remove(regPath)
	_, err = f.g.Register(ctx, f.featureRequest("a"))
	wantCode(t, err, CodeTampered, "ledger")
	_, err = f.transition("a", "review", "draft")
	wantCode(t, err, CodeTampered, "ledger")
}

// TestUnreadableIsNotNotFound: a resource path that cannot be checked
// (here a plain file where its directory should be) is an internal error,
// never "not registered".
func TestUnreadableIsNotNotFound(t *testing.T) {
	f := newFixture(t)
	f.register(f.featureRequest("other")) // creates the store root
	if err := os.WriteFile(f.dir("odd"), []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := f.transition("odd", "draft", "review")
	wantCode(t, err, CodeInternal)
	_, err = f.g.Register(context.Background(), f.featureRequest("odd"))
	wantCode(t, err, CodeInternal)
}
