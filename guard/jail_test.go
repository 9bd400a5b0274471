package guard

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestWorkspaceJail: a workspace_root must be an existing directory inside
// the roots the person who started Stratum allowed, at registration and
// again at every transition; the refusal names the allowed roots and the
// flag that allows another.
func TestWorkspaceJail(t *testing.T) {
	tmp := t.TempDir()
	allowed, outside := filepath.Join(tmp, "allowed"), filepath.Join(tmp, "outside")
	ws, nested := filepath.Join(allowed, "ws"), filepath.Join(allowed, "a", "b")
	for _, d := range []string{ws, nested, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(allowed, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	linkOut := filepath.Join(allowed, "link-out")
	os.Symlink(outside, linkOut)
	linkToAllowed := filepath.Join(tmp, "allowed-link")
	os.Symlink(allowed, linkToAllowed)
	dotdot := filepath.Join(allowed, "..")
	sibling := allowed + "-sibling" // a prefix of the name is not "inside"
	os.MkdirAll(sibling, 0o755)

	g, err := New(Options{Root: filepath.Join(tmp, "guards"), AllowedRoots: []string{allowed}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	register := func(id, root string) error {
		_, err := g.Register(ctx, RegisterRequest{ResourceID: id, Graph: map[string]any{"a": []any{"b"}, "b": []any{}},
			EdgePredicates: map[string]any{"a->b": []any{map[string]any{"statement": "server_file_exists('x')"}}}, Initial: "a", WorkspaceRoot: &root})
		return err
	}
	for _, c := range []struct {
		name, root string
		ok         bool
		msg        []string
	}{
		{"the allowed root itself", allowed, true, nil},
		{"below it", ws, true, nil},
		{"deeper", nested, true, nil},
		{"through a symlink to inside", filepath.Join(linkToAllowed, "ws"), true, nil},
		{"/", "/", false, []string{"outside the allowed roots (" + allowed + ")", AllowRootHint}},
		{"a sibling directory", outside, false, []string{"outside the allowed roots"}},
		{"a name that only shares a prefix", sibling, false, []string{"outside the allowed roots"}},
		{"..", dotdot, false, []string{"outside the allowed roots"}},
		{"a symlink inside that leads out", linkOut, false, []string{"resolves to " + outside, "--allow-root DIR"}},
		{"missing", filepath.Join(allowed, "missing"), false, []string{"not an existing directory"}},
		{"a file", file, false, []string{"not an existing directory"}},
		{"relative", "allowed/ws", false, []string{"not an absolute path"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := register("r:"+c.name, c.root)
			if c.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantCode(t, err, CodeInvalidWorkspaceRoot, c.msg...)
		})
	}

	// At transition time: a registry naming a root this server does not
	// allow (registered under a wider policy) is refused, nothing recorded.
	wide, err := New(Options{Root: filepath.Join(tmp, "guards"), AllowedRoots: []string{tmp}})
	if err != nil {
		t.Fatal(err)
	}
	root := outside
	if _, err := wide.Register(ctx, RegisterRequest{ResourceID: "wide", Graph: map[string]any{"a": []any{"b"}, "b": []any{}},
		EdgePredicates: map[string]any{}, Initial: "a", WorkspaceRoot: &root}); err != nil {
		t.Fatal(err)
	}
	_, err = g.Transition(ctx, TransitionRequest{ResourceID: "wide", FromState: "a", ToState: "b", Artifacts: map[string]any{}})
	wantCode(t, err, CodeInvalidWorkspaceRoot, "the registered workspace_root", "outside the allowed roots", AllowRootHint)
	// A registered root that has gone away.
	if err := register("gone", ws); err != nil {
		t.Fatal(err)
	}
	os.Remove(ws)
	_, err = g.Transition(ctx, TransitionRequest{ResourceID: "gone", FromState: "a", ToState: "b", Artifacts: map[string]any{}})
	wantCode(t, err, CodeInvalidWorkspaceRoot, "not an existing directory")
	for _, id := range []string{"wide", "gone"} {
		if h, err := g.History(ctx, HistoryRequest{ResourceID: id}); err != nil || len(h.Ledger) != 0 {
			t.Fatalf("%s: %+v %v", id, h, err)
		}
	}

	// An allowed root given through a symlink works by its real path.
	viaLink, err := New(Options{Root: filepath.Join(tmp, "guards2"), AllowedRoots: []string{linkToAllowed}})
	if err != nil {
		t.Fatal(err)
	}
	n := nested
	if _, err := viaLink.Register(ctx, RegisterRequest{ResourceID: "n", Graph: map[string]any{"a": []any{}}, EdgePredicates: map[string]any{}, Initial: "a", WorkspaceRoot: &n}); err != nil {
		t.Fatal(err)
	}
}

// TestAllowedRootsDefault: with no AllowedRoots the server's working
// directory is the one allowed root.
func TestAllowedRootsDefault(t *testing.T) {
	g, err := New(Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if got := g.AllowedRoots(); !slices.Equal(got, []string{wd}) {
		t.Fatalf("AllowedRoots() = %v, want [%s]", got, wd)
	}
	tmp := t.TempDir()
	_, err = g.Register(context.Background(), RegisterRequest{ResourceID: "r", Graph: map[string]any{"a": []any{}}, EdgePredicates: map[string]any{}, Initial: "a", WorkspaceRoot: &tmp})
	wantCode(t, err, CodeInvalidWorkspaceRoot, "outside the allowed roots ("+wd+")")
}
