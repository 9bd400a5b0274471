//go:build unix

package expr

import (
	"path/filepath"
	"syscall"
	"testing"
)

// A FIFO is not a regular file: false, and no hang waiting for a writer.
func TestFileFIFO(t *testing.T) {
	root, _ := workspace(t)
	if err := syscall.Mkfifo(filepath.Join(root, "pipe"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if ok, err := FileExists(root, "pipe"); ok || err != nil {
		t.Errorf("FileExists(pipe) = %v, %v", ok, err)
	}
	if ok, err := FileContains(root, "pipe", ""); ok || err != nil {
		t.Errorf("FileContains(pipe) = %v, %v", ok, err)
	}
}
