package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	for _, content := range []string{"first", "second, longer", "3"} {
		if err := WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != content {
			t.Fatalf("read %q, want %q", got, content)
		}
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the target", len(entries))
	}
}

func TestWriteFileMissingDir(t *testing.T) {
	err := WriteFile(filepath.Join(t.TempDir(), "no", "such", "f"), []byte("x"), 0o644)
	if err == nil {
		t.Fatal("want an error for a missing directory")
	}
}

func TestAppendLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "log.jsonl")
	for _, l := range []string{`{"a":1}`, `{"b":2}`} {
		if err := AppendLine(p, []byte(l), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := os.ReadFile(p)
	if string(got) != "{\"a\":1}\n{\"b\":2}\n" {
		t.Fatalf("log = %q", got)
	}
	if err := AppendLine(p, []byte("a\nb"), 0o644); err == nil {
		t.Fatal("a line with a newline must be refused")
	}
}

func TestSweep(t *testing.T) {
	dir := t.TempDir()
	// Only WriteFile's own temp files go. The others are what shares the
	// directories it is called on: a run's or a resource's .lock (held by
	// the caller while it sweeps), other dot-files, a file that merely
	// looks like a temp file, a directory of that name.
	keep := []string{"state.json", ".lock", ".hidden", "state.json.tmp-1"}
	for _, name := range keep {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, ".dir.tmp-2"), 0o755); err != nil {
		t.Fatal(err)
	}
	keep = append(keep, ".dir.tmp-2")
	os.WriteFile(filepath.Join(dir, ".state.json.tmp-123"), []byte("torn"), 0o600)
	n, err := Sweep(dir)
	if err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v; want 1, nil", n, err)
	}
	for _, name := range keep {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("sweep removed %s", name)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".state.json.tmp-123")); !os.IsNotExist(err) {
		t.Errorf("the temp file is still there: %v", err)
	}
}
