package guard

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The findings of issue 13 (guard part), reproduced on today's code.

func TestFindingRedirectedWorkspaceRoot(t *testing.T) {
	f := newFixture(t)
	f.register(f.featureRequest("r"))
	f.write("plan.md", "draft")
	f.mustTransition("r", "draft", "review")
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "plan.md"), []byte("approved"), 0o644)
	reg := filepath.Join(f.dir("r"), registryFile)
	b, _ := os.ReadFile(reg)
	os.WriteFile(reg, []byte(strings.Replace(string(b), `"workspace_root": "`+f.ws+`"`, `"workspace_root": "`+other+`"`, 1)), 0o600)
	res, err := f.transition("r", "review", "done")
	if err == nil {
		t.Errorf("redirected workspace_root: transition %s, want guard_tampered", res.Status)
	}
	if _, err := f.verify("r"); err == nil {
		t.Errorf("redirected workspace_root: verify ok")
	}
}

func TestFindingDeletedLedger(t *testing.T) {
	f := newFixture(t)
	f.register(f.featureRequest("r"))
	f.write("plan.md", "draft")
	f.mustTransition("r", "draft", "review")
	os.Remove(filepath.Join(f.dir("r"), ledgerFile))
	if v, err := f.verify("r"); err == nil {
		t.Errorf("deleted ledger: verify ok, %d entries, state %s", v.Entries, v.CurrentState)
	}
}

func TestFindingEditedCompleteLastLine(t *testing.T) {
	f := newFixture(t)
	f.register(f.featureRequest("r"))
	f.write("plan.md", "draft")
	f.mustTransition("r", "draft", "review")
	f.mustTransition("r", "review", "draft")
	path := filepath.Join(f.dir("r"), ledgerFile)
	b := f.ledgerBytes("r")
	lines := strings.SplitAfter(string(b), "\n")
	lines[1] = strings.Replace(lines[1], `"resolved_by":"agent"`, `"resolved_by":"human"`, 1)
	os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600)
	_, err := f.transition("r", "review", "done")
	if CodeOf(err) != CodeLedgerCorrupt && CodeOf(err) != CodeTampered {
		t.Errorf("edited complete last line: next transition %v, want ledger_corrupt", err)
	}
	if _, err := f.verify("r"); err == nil {
		t.Errorf("edited complete last line: verify ok after the next mutation")
	}
}

func TestFindingModes(t *testing.T) {
	f := newFixture(t)
	f.register(f.featureRequest("r"))
	f.write("plan.md", "draft")
	f.mustTransition("r", "draft", "review")
	for _, p := range []string{f.dir("r"), filepath.Join(f.dir("r"), ledgerFile), filepath.Join(f.dir("r"), lockFile)} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s is mode %v", filepath.Base(p), fi.Mode().Perm())
		}
	}
}

func TestFindingRootSlash(t *testing.T) {
	f := newFixture(t)
	req := f.featureRequest("r")
	slash := "/"
	req.WorkspaceRoot = &slash
	if _, err := f.g.Register(context.Background(), req); err == nil {
		t.Errorf("workspace_root / accepted")
	}
}
