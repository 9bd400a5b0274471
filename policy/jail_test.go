package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// jailFixture: allowed/ (the allowed root) holding sub/, a file, a link
// to outside and a link to sub; outside/ next to it; link-to-allowed, a
// link outside the allowed root pointing into it.
func jailFixture(t *testing.T) (base, allowed string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	allowed = filepath.Join(base, "allowed")
	for _, d := range []string{"allowed/sub/deeper", "outside"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(allowed, "file.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"allowed/out":     filepath.Join(base, "outside"),
		"allowed/in":      filepath.Join(allowed, "sub"),
		"link-to-allowed": allowed,
		"link-to-sub":     filepath.Join(allowed, "sub"),
	} {
		if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
			t.Fatal(err)
		}
	}
	return base, allowed
}

func TestWorkspaceJail(t *testing.T) {
	base, allowed := jailFixture(t)
	p := newPolicy(t, Options{Command: "stratum mcp", Mode: Server, WorkDir: allowed})
	viaLink := newPolicy(t, Options{Command: "stratum mcp", Mode: Server, WorkDir: base,
		Flags: Flags{Roots: Strings{"link-to-allowed"}}})
	cases := []struct {
		name   string
		p      *Policy
		root   string
		client []string
		want   string // "" accepted
	}{
		{"the root itself", p, allowed, nil, ""},
		{"a directory inside", p, filepath.Join(allowed, "sub", "deeper"), nil, ""},
		{"the filesystem root", p, "/", nil, "is the filesystem root"},
		{"outside", p, filepath.Join(base, "outside"), nil, "is outside the allowed roots"},
		{"the parent", p, base, nil, "is outside the allowed roots"},
		{"missing", p, filepath.Join(allowed, "nothing"), nil, "does not exist"},
		{"a file", p, filepath.Join(allowed, "file.txt"), nil, "is not a directory"},
		{"relative", p, "sub", nil, "is not an absolute path"},
		{"a link to outside", p, filepath.Join(allowed, "out"), nil, "resolves to " + filepath.Join(base, "outside")},
		{"a link inside to inside", p, filepath.Join(allowed, "in"), nil, "goes through the symbolic link " + filepath.Join(allowed, "in")},
		{"a link from outside to inside", p, filepath.Join(base, "link-to-sub"), nil, "only through a symbolic link"},
		{"the person's root through a link", viaLink, filepath.Join(base, "link-to-allowed", "sub"), nil, ""},
		{"the person's root through its real path", viaLink, filepath.Join(allowed, "sub"), nil, ""},
		{"a client root", p, filepath.Join(base, "outside"), []string{filepath.Join(base, "outside")}, ""},
		{"a client root of /", p, base, []string{"/"}, "is outside the allowed roots"},
		{"a relative client root", p, filepath.Join(base, "outside"), []string{"outside"}, "is outside the allowed roots"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			anchor, err := c.p.Workspace(c.root, c.client)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want == "" && !anchorHolds(anchor, c.root):
				t.Fatalf("anchor %q: it must be a real path, with the root's real path below it", anchor)
			case c.want == "":
				return
			case anchor != "":
				t.Fatalf("refused with an anchor %q", anchor)
			case err == nil:
				t.Fatalf("accepted, want %q", c.want)
			case !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrOutsideRoots):
				t.Fatalf("refusal %q does not say %q", err, c.want)
			case !strings.Contains(err.Error(), "--allow-root DIR") || !strings.Contains(err.Error(), allowed):
				t.Fatalf("refusal %q names neither the allowed roots nor the flag", err)
			}
		})
	}
	noClient := newPolicy(t, Options{Command: "stratum mcp", Mode: Server, WorkDir: allowed,
		Flags: Flags{File: writeFile(t, "version: 1\nclient_roots: false\n")}})
	if _, err := noClient.Workspace(filepath.Join(base, "outside"), []string{filepath.Join(base, "outside")}); err == nil {
		t.Error("client_roots: false, yet a client root was accepted")
	}
}

func TestRoots(t *testing.T) {
	base, allowed := jailFixture(t)
	file := writeFile(t, "version: 1\nroots: ["+filepath.Join(base, "outside")+"]\n")
	p := newPolicy(t, Options{WorkDir: base, Flags: Flags{File: file, Roots: Strings{"allowed", "allowed"}}})
	if got, want := strings.Join(p.Roots(), " "), allowed+" "+filepath.Join(base, "outside"); got != want {
		t.Errorf("roots %q, want %q", got, want)
	}
	// Started in the filesystem root with no root named: no root at all.
	none := newPolicy(t, Options{Command: "stratum mcp", WorkDir: "/"})
	if len(none.Roots()) != 0 {
		t.Errorf("roots of a server started in /: %v", none.Roots())
	}
	if _, err := none.Workspace(allowed, nil); err == nil || !strings.Contains(err.Error(), "stratum mcp was started in /") {
		t.Errorf("workspace under a server started in /: %v", err)
	}
	for _, bad := range []string{"/", "allowed/file.txt", "nowhere"} {
		if _, err := New(Options{WorkDir: base, Flags: Flags{Roots: Strings{bad}}}); err == nil || !strings.Contains(err.Error(), "--allow-root "+bad) {
			t.Errorf("--allow-root %s: %v", bad, err)
		}
	}
}

// anchorHolds reports whether anchor is a real path (no symbolic link in
// it) with root's real path inside it.
func anchorHolds(anchor, root string) bool {
	realAnchor, err := filepath.EvalSymlinks(anchor)
	if err != nil || realAnchor != anchor {
		return false
	}
	realRoot, err := filepath.EvalSymlinks(root)
	return err == nil && inside(anchor, realRoot)
}
