package mcp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGuardTools(t *testing.T) {
	f := newFixture(t)
	ws := t.TempDir()
	policy := map[string]any{
		"resource_id":     "tracker:FEAT-1",
		"graph":           map[string]any{"todo": []any{"doing"}, "doing": []any{"done"}, "done": []any{}},
		"edge_predicates": map[string]any{"doing->done": []any{map[string]any{"type": "deterministic", "statement": "server_file_exists('CHANGELOG.md')"}}},
		"initial":         "todo",
		"terminal":        []any{"done"},
		"workspace_root":  ws,
	}
	r := f.call("stratum_guard_register", policy).mustStatus(t, "registered")
	sum := r.Body["checksum"]
	if r2 := f.call("stratum_guard_register", policy).mustStatus(t, "exists"); r2.Body["checksum"] != sum {
		t.Errorf("exists with another checksum: %s", r2.Text)
	}
	other := map[string]any{}
	for k, v := range policy {
		other[k] = v
	}
	other["edge_predicates"] = map[string]any{}
	f.call("stratum_guard_register", other).mustError(t, "guard_already_registered")
	f.call("stratum_guard_register", map[string]any{"resource_id": "x"}).mustError(t, "invalid_argument")

	move := func(from, to, key string) result {
		return f.call("stratum_guard_transition", map[string]any{"resource_id": "tracker:FEAT-1", "from_state": from,
			"to_state": to, "artifacts": map[string]any{}, "idempotency_key": key})
	}
	move("todo", "doing", "k1").mustStatus(t, "applied")
	move("todo", "doing", "k1").mustStatus(t, "replayed")
	move("todo", "doing", "k2").mustError(t, "stale_from_state")
	move("doing", "todo", "k3").mustError(t, "illegal_edge")
	r = move("doing", "done", "k4").mustStatus(t, "refused")
	if !strings.Contains(r.Text, "CHANGELOG.md") {
		t.Errorf("refusal does not say why: %s", r.Text)
	}
	if err := os.WriteFile(filepath.Join(ws, "CHANGELOG.md"), []byte("v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	move("doing", "done", "k5").mustStatus(t, "applied")

	h := f.call("stratum_guard_history", map[string]any{"resource_id": "tracker:FEAT-1"}).mustStatus(t, "ok")
	if h.Body["current_state"] != "done" || len(h.Body["ledger"].([]any)) < 3 {
		t.Errorf("history: %s", h.Text)
	}
	f.call("stratum_guard_history", map[string]any{"resource_id": "nope"}).mustError(t, "guard_not_found")

	// Upgrades: identical is unchanged, additive is migrated, weakening refused.
	up := map[string]any{"resource_id": "tracker:FEAT-1", "new_graph": policy["graph"], "new_edge_predicates": policy["edge_predicates"],
		"new_terminal": []any{"done"}, "rationale": "same"}
	f.call("stratum_guard_upgrade", up).mustStatus(t, "unchanged")
	up["new_edge_predicates"] = map[string]any{}
	up["rationale"] = "drop the evidence"
	f.call("stratum_guard_upgrade", up).mustError(t, "incompatible_policy_upgrade")

	// Signed paths without a valid signature are refused, never applied.
	f.call("stratum_guard_override", map[string]any{"resource_id": "tracker:FEAT-1", "from_state": "doing", "to_state": "done",
		"authorization": "not a signature", "rationale": "r"}).mustStatus(t, statusError)
	f.call("stratum_guard_migrate", map[string]any{"resource_id": "tracker:FEAT-1", "new_graph": map[string]any{"todo": []any{}},
		"new_edge_predicates": map[string]any{}, "authorization": "not a signature", "rationale": "r"}).mustStatus(t, statusError)
	f.call("stratum_guard_apply_upgrade", map[string]any{"resource_id": "tracker:FEAT-1", "descriptor_id": "d"}).mustError(t, "upgrade_descriptor_unavailable")
	f.call("stratum_guard_history", map[string]any{"resource_id": "tracker:FEAT-1"}).mustStatus(t, "ok")
}

func TestCompileSpeckit(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	for name, text := range map[string]string{
		"01-setup.md": "# Set up the project\n\nCreate the layout.\n\n## Acceptance Criteria\n\n- [ ] file README.md exists\n- [ ] the layout is tidy\n",
		"02-build.md": "# Build it\n\nWrite the code.\n\n## Acceptance Criteria\n\n- [ ] tests pass\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := f.call("stratum_compile_speckit", map[string]any{"tasks_dir": dir, "flow_name": "demo"}).mustStatus(t, "ok")
	if r.Body["flow_name"] != "demo" || len(r.Body["steps"].([]any)) != 2 {
		t.Errorf("compile: %s", r.Text)
	}
	// The YAML is a spec the server accepts.
	f.call("stratum_validate", map[string]any{"spec": r.Body["yaml"]}).mustStatus(t, "valid")
	f.call("stratum_compile_speckit", map[string]any{"tasks_dir": filepath.Join(dir, "missing")}).mustError(t, "directory_not_found")
	f.call("stratum_compile_speckit", map[string]any{}).mustError(t, CodeInvalidArguments)
}
