package expr

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// workspace builds a workspace next to a directory outside it:
//
//	outside/secret.txt
//	ws/f.txt, ws/sub/g.txt, ws/dir/, ws/empty.txt, ws/bad.txt (invalid UTF-8),
//	ws/big.bin (MaxFileBytes+1), ws/exact.bin (MaxFileBytes),
//	symlinks: link_in -> f.txt, link_out -> ../outside/secret.txt,
//	dirlink_in -> sub, dirlink_out -> ../outside, dangling -> missing.txt,
//	dangling_out -> ../outside/missing.txt, abs_in -> <abs>/ws/f.txt,
//	abs_out -> <abs>/outside/secret.txt, absdir_in -> <abs>/ws/sub,
//	abs_dangling -> <abs>/ws/missing.txt, chain -> link_in,
//	loop_a -> loop_b -> loop_a, sub/up -> .. (the root itself)
func workspace(t *testing.T) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root = filepath.Join(base, "ws")
	outside = filepath.Join(base, "outside")
	for _, d := range []string{root, outside, filepath.Join(root, "sub"), filepath.Join(root, "dir")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(outside, "secret.txt"): "secret",
		filepath.Join(root, "f.txt"):         "hello world",
		filepath.Join(root, "sub", "g.txt"):  "nested",
		filepath.Join(root, "empty.txt"):     "",
		filepath.Join(root, "bad.txt"):       "a\xffb\xe2\x82z",
		filepath.Join(root, "C:x"):           "drive-relative, ok",
	}
	for p, content := range files {
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, size := range map[string]int64{"big.bin": MaxFileBytes + 1, "exact.bin": MaxFileBytes} {
		f, err := os.Create(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(size); err != nil { // sparse: fast and small on disk
			t.Fatal(err)
		}
		f.Close()
	}
	links := map[string]string{
		"link_in":      "f.txt",
		"link_out":     filepath.Join("..", "outside", "secret.txt"),
		"dirlink_in":   "sub",
		"dirlink_out":  filepath.Join("..", "outside"),
		"dangling":     "missing.txt",
		"dangling_out": filepath.Join("..", "outside", "missing.txt"),
		"abs_in":       filepath.Join(root, "f.txt"),
		"abs_out":      filepath.Join(outside, "secret.txt"),
		"absdir_in":    filepath.Join(root, "sub"),
		"abs_dangling": filepath.Join(root, "missing.txt"),
		"chain":        "link_in",
		"loop_a":       "loop_b",
		"loop_b":       "loop_a",
		"sub/up":       "..",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Skipf("symlinks unavailable: %v", err)
		}
	}
	return root, outside
}

// outcome is "true", "false" or an error code.
func outcome(ok bool, err error) string {
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return string(e.Code)
		}
		return "non-*Error: " + err.Error()
	}
	if ok {
		return "true"
	}
	return "false"
}

func TestFileJail(t *testing.T) {
	root, _ := workspace(t)
	const bad = "validation_error"
	tests := []struct {
		path     string
		exists   string
		contains string // file_contains(path, "o")
	}{
		{"f.txt", "true", "true"},
		{"./f.txt", "true", "true"},
		{"sub/../f.txt", "true", "true"},
		{"sub//g.txt", "true", "false"},
		{"sub/./g.txt", "true", "false"},
		{"empty.txt", "true", "false"},
		{".", "false", "false"},
		{"dir", "false", "false"},
		{"dir/", "false", "false"},
		{"missing.txt", "false", "false"},
		{"f.txt/x", "false", bad}, // not a directory: the open fails
		{"C:x", "true", "true"},   // drive-relative is not absolute
		{`sub\g.txt`, "false", "false"},
		// Lexical escapes.
		{"..", bad, bad},
		{"../outside/secret.txt", bad, bad},
		{"sub/../../outside/secret.txt", bad, bad},
		{"a/../../x", bad, bad},
		// Absolute paths in POSIX and Windows forms.
		{"/etc/passwd", bad, bad},
		{filepath.Join(root, "f.txt"), bad, bad},
		{`\x`, bad, bad},
		{`C:\x`, bad, bad},
		{`c:/x`, bad, bad},
		{`\\server\share`, bad, bad},
		{"", bad, bad},
		{"f.txt\x00", bad, bad},
		// Symlinks inside are followed; pointing out is refused.
		{"link_in", "true", "true"},
		{"abs_in", "true", "true"},
		{"dirlink_in/g.txt", "true", "false"},
		{"link_out", bad, bad},
		{"dirlink_out", bad, bad},
		{"dirlink_out/secret.txt", bad, bad},
		// Through a link that leads out, even to nothing: refused, so that
		// the answer says nothing about what exists outside.
		{"dirlink_out/missing.txt", bad, bad},
		{"dangling_out", bad, bad},
		// Dangling links: not a file; file_contains refuses to open them.
		{"dangling", "false", bad},
		// An absolute link inside is followed when its target exists (the
		// jail resolves it to a path inside before opening); to nothing, it
		// is refused like a link out.
		{"abs_dangling", bad, bad},
		{"abs_out", bad, bad},
		{"absdir_in/g.txt", "true", "false"},
		{"chain", "true", "true"},
		{"sub/up/f.txt", "true", "true"},
		{"sub/up/sub/up/sub/g.txt", "true", "false"},
		// A loop is not a file; file_contains refuses it.
		{"loop_a", "false", bad},
		// The size cap.
		{"big.bin", "true", bad},
		{"exact.bin", "true", "false"},
	}
	for _, tt := range tests {
		if got := outcome(FileExists(root, tt.path)); got != tt.exists {
			t.Errorf("FileExists(%q) = %s, want %s", tt.path, got, tt.exists)
		}
		if got := outcome(FileContains(root, tt.path, "o")); got != tt.contains {
			t.Errorf("FileContains(%q, \"o\") = %s, want %s", tt.path, got, tt.contains)
		}
	}
}

func TestFileContainsText(t *testing.T) {
	root, _ := workspace(t)
	tests := []struct {
		path, text string
		want       bool
	}{
		{"f.txt", "world", true},
		{"f.txt", "", true},
		{"f.txt", "World", false},
		{"empty.txt", "", true},
		{"bad.txt", "a\uFFFDb", true},        // one U+FFFD per invalid byte run
		{"bad.txt", "b\uFFFDz", true},        // a truncated sequence is one U+FFFD
		{"bad.txt", "b\uFFFD\uFFFDz", false}, // ... not two
		{"bad.txt", "ab", false},
	}
	for _, tt := range tests {
		got, err := FileContains(root, tt.path, tt.text)
		if err != nil || got != tt.want {
			t.Errorf("FileContains(%q, %q) = %v, %v; want %v", tt.path, tt.text, got, err, tt.want)
		}
	}
}

func TestResolveInWorkspace(t *testing.T) {
	root, _ := workspace(t)
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ResolveInWorkspace(root, "dirlink_in/g.txt")
	if err != nil || got != filepath.Join(realRoot, "sub", "g.txt") {
		t.Errorf("ResolveInWorkspace(dirlink_in/g.txt) = %q, %v", got, err)
	}
	got, err = ResolveInWorkspace(root, "new/file.txt")
	if err != nil || got != filepath.Join(root, "new", "file.txt") {
		t.Errorf("ResolveInWorkspace(new/file.txt) = %q, %v", got, err)
	}
	if _, err := ResolveInWorkspace("", "f.txt"); err == nil {
		t.Error("an empty root was accepted")
	}
	// A workspace reached through a symlink is the same jail.
	alias := filepath.Join(t.TempDir(), "alias")
	if err := os.Symlink(root, alias); err != nil {
		t.Fatal(err)
	}
	if ok, err := FileExists(alias, "link_in"); err != nil || !ok {
		t.Errorf("FileExists via a symlinked root = %v, %v", ok, err)
	}
	if _, err := FileExists(alias, "link_out"); err == nil {
		t.Error("link_out via a symlinked root was accepted")
	}
}

func TestFileFunctionsInExpressions(t *testing.T) {
	root, _ := workspace(t)
	opts := &EvalOptions{WorkspaceRoot: root}
	tests := []struct {
		expr string
		opts *EvalOptions
		want string
	}{
		{"file_exists('f.txt')", opts, "true"},
		{"file_exists('sub/g.txt') && file_contains('sub/g.txt', 'nest')", opts, "true"},
		{"file_contains('f.txt', 'xyz')", opts, "false"},
		{"file_exists('../outside/secret.txt')", opts, "validation_error"},
		{"file_exists(1)", opts, "type_error"},
		{"file_contains('f.txt', 1)", opts, "type_error"},
		{"file_contains(1, 'x')", opts, "type_error"},
		{"file_exists('f.txt', 'x')", opts, "type_error"},
		{"file_exists('f.txt')", nil, "validation_error"},
		{"file_exists(1)", nil, "validation_error"}, // the root check comes first
		{"file_exists()", nil, "type_error"},        // arity comes before it
		{"file_contains('x')", nil, "type_error"},
		{"file_exists('f.txt')", &EvalOptions{}, "validation_error"},
	}
	for _, tt := range tests {
		p, err := Compile(tt.expr)
		if err != nil {
			t.Fatal(err)
		}
		v, err := p.EvalContext(context.Background(), Bindings{}, tt.opts)
		b, _ := v.(bool)
		if got := outcome(b, err); got != tt.want {
			t.Errorf("%s = %s (%v), want %s", tt.expr, got, err, tt.want)
		}
	}
}

// The expected strings are what Node.js's Buffer.toString("utf8") gives.
func TestDecodeUTF8Lossy(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a\xffb\xe2\x82z\xf0\x90A\xed\xa0\x80", "a\uFFFDb\uFFFDz\uFFFDA\uFFFD\uFFFD\uFFFD"},
		{"\xc0\xaf", "\uFFFD\uFFFD"},
		{"\xf4\x90\x80\x80", "\uFFFD\uFFFD\uFFFD\uFFFD"},
		{"\xe0\x80\x80", "\uFFFD\uFFFD\uFFFD"},
		{"\xf1\x80\x80", "\uFFFD"},
		{"ok\xe2\x82", "ok\uFFFD"},
	}
	for _, tt := range tests {
		if got := decodeUTF8Lossy([]byte(tt.in)); got != tt.want {
			t.Errorf("decodeUTF8Lossy(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// A workspace root renamed and replaced by a symbolic link out after it
// was admitted: with its anchor (the allowed directory it was admitted
// under), the file functions refuse it instead of reading through the
// link; a root replaced by another directory inside the anchor is still
// inside what the person allowed, and is read (through a relative or an
// absolute link).
func TestFileJailAnchoredRoot(t *testing.T) {
	anchor := t.TempDir()
	outside := t.TempDir()
	ws := filepath.Join(anchor, "ws")
	for dir, text := range map[string]string{ws: "inside", outside: "secret", filepath.Join(anchor, "other"): "other"} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	eval := func(src string, opts *EvalOptions) (bool, error) {
		p, err := Compile(src)
		if err != nil {
			t.Fatal(err)
		}
		return p.EvalPredicate(context.Background(), Bindings{}, opts)
	}
	anchored := &EvalOptions{WorkspaceRoot: ws, WorkspaceAnchor: anchor}
	if ok, err := eval("file_contains('f.txt', 'inside')", anchored); !ok || err != nil {
		t.Fatalf("before the swap: %v, %v", ok, err)
	}
	if ok, err := eval("file_exists('ws/f.txt')", &EvalOptions{WorkspaceRoot: anchor, WorkspaceAnchor: anchor}); !ok || err != nil {
		t.Fatalf("the anchor itself as the root: %v, %v", ok, err)
	}
	if err := os.Rename(ws, ws+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, ws); err != nil {
		t.Fatal(err)
	}
	// Without an anchor the swapped root is followed: the gap this closes.
	if ok, err := eval("file_contains('f.txt', 'secret')", &EvalOptions{WorkspaceRoot: ws}); !ok || err != nil {
		t.Fatalf("unanchored read through the swapped root: %v, %v (want it to read: the test's premise)", ok, err)
	}
	for _, src := range []string{"file_contains('f.txt', 'secret')", "file_exists('f.txt')"} {
		ok, err := eval(src, anchored)
		var e *Error
		if ok || !errors.As(err, &e) || e.Code != CodeValidation || !strings.Contains(e.Message, "no longer inside") {
			t.Errorf("%s through a root swapped for a link out = %v, %v; want a validation_error saying it is no longer inside", src, ok, err)
		}
	}
	if err := os.Remove(ws); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"other", filepath.Join(anchor, "other")} {
		_ = os.Remove(ws)
		if err := os.Symlink(target, ws); err != nil {
			t.Fatal(err)
		}
		if ok, err := eval("file_contains('f.txt', 'other')", anchored); !ok || err != nil {
			t.Errorf("root replaced by a link (%s) to a directory inside the anchor: %v, %v; want it read", target, ok, err)
		}
	}
	if ok, err := eval("file_exists('f.txt')", &EvalOptions{WorkspaceRoot: outside, WorkspaceAnchor: anchor}); ok || err == nil {
		t.Errorf("a root outside its anchor = %v, %v; want refused", ok, err)
	}
	// The root is the allowed directory itself, and that is replaced.
	if err := os.Rename(anchor, anchor+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, anchor); err != nil {
		t.Fatal(err)
	}
	ok, err := eval("file_contains('f.txt', 'secret')", &EvalOptions{WorkspaceRoot: anchor, WorkspaceAnchor: anchor})
	var e *Error
	if ok || !errors.As(err, &e) || !strings.Contains(e.Message, "no longer inside") {
		t.Errorf("the allowed directory itself replaced by a link out = %v, %v; want refused", ok, err)
	}
}
