package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// TestBuildsForOtherSystems builds the stratum binary for Windows and for
// macOS: the store and the scratch files keep their Linux-only and
// Unix-only calls behind build constraints, and a call that slips out of
// them breaks only these builds, which nothing else here makes. (macOS
// stands for the other Unix systems, which take the same files.) On a
// fresh machine the two cost about a minute of CPU: the standard library
// is compiled for each.
func TestBuildsForOtherSystems(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the cross builds compile the standard library for each system")
	}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		t.Fatalf("the go command of this toolchain: %v", err)
	}
	for _, goos := range []string{"windows", "darwin"} {
		t.Run(goos, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(gobin, "build", "-o", filepath.Join(t.TempDir(), "stratum"), ".")
			cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=amd64", "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("GOOS=%s go build ./cmd/stratum: %v\n%s", goos, err, out)
			}
		})
	}
}
