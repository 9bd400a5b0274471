package ir

import (
	"os"
	"testing"
)

func TestDump(t *testing.T) {
	f := os.Getenv("DUMP")
	if f == "" {
		t.Skip()
	}
	src, _ := os.ReadFile(f)
	_, ds := Build(src)
	t.Log("\n" + formatDiags(ds))
}
