package cli

import (
	"flag"
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
