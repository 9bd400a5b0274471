package cli

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestHelpConsistency keeps "stratum help CMD" in one style: every command
// states its exit statuses, names every flag in its synopsis, and shows each
// value-taking flag with an upper-case placeholder (--agent CMD, not
// --agent string).
func TestHelpConsistency(t *testing.T) {
	placeholder := regexp.MustCompile(`^[A-Z][A-Z_]*$|^k=v$`)
	for _, mk := range commands() {
		cmd := mk()
		name := cmd.Name()
		if !strings.Contains(strings.ToLower(cmd.Long()), "exit status") {
			t.Errorf("%s: help does not state its exit statuses", name)
		}
		if s := cmd.Short(); s == "" || strings.HasSuffix(s, ".") || s != strings.ToLower(s[:1])+s[1:] {
			t.Errorf("%s: short description %q should start lower-case with no final period", name, s)
		}
		fs := flag.NewFlagSet(name, flag.ContinueOnError)
		cmd.SetFlags(fs)
		fs.VisitAll(func(f *flag.Flag) {
			if !strings.Contains(cmd.Synopsis(), "--"+f.Name) && !strings.Contains(cmd.Synopsis(), "-"+f.Name+" ") {
				t.Errorf("%s: flag --%s is missing from the synopsis %q", name, f.Name, cmd.Synopsis())
			}
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
				return
			}
			if ph, _ := flag.UnquoteUsage(f); !placeholder.MatchString(ph) {
				t.Errorf("%s: flag --%s shows the placeholder %q; name it in upper case in backquotes", name, f.Name, ph)
			}
		})
	}
}

// TestHelpGolden holds the whole help text, `stratum help` and `stratum
// help COMMAND` for every command, to testdata/help/*.txt: a change to
// what a person reads is a reviewed diff (go test ./cli -run
// TestHelpGolden -update rewrites them).
func TestHelpGolden(t *testing.T) {
	pages := map[string][]string{"stratum": {"help"}}
	for _, mk := range commands() {
		name := mk().Name()
		pages[name] = []string{"help", name}
	}
	for name, args := range pages {
		var out, errb bytes.Buffer
		env := &Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
		if code := run(context.Background(), env, args); code != 0 {
			t.Fatalf("stratum %v: exit %d: %s", args, code, errb.String())
		}
		path := filepath.Join("testdata", "help", name+".txt")
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if !bytes.Equal(out.Bytes(), want) {
			t.Errorf("stratum %v differs from %s (run with -update if the change is meant):\n%s", args, path, out.String())
		}
	}
	entries, _ := os.ReadDir(filepath.Join("testdata", "help"))
	for _, e := range entries {
		if _, ok := pages[strings.TrimSuffix(e.Name(), ".txt")]; !ok {
			t.Errorf("testdata/help/%s names no command: remove it", e.Name())
		}
	}
}
