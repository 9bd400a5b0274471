//go:build !unix

package mcp

import (
	"os"
	"runtime"
	"testing"
)

// socketPair needs Unix stream sockets: STRATUM_BENCH_STDIO=socket (as
// Node connects a child) is a Unix mode, refused here by name.
func socketPair(tb testing.TB) [2]*os.File {
	tb.Fatalf("STRATUM_BENCH_STDIO=socket needs Unix socket pairs, which %s does not have; use pipe", runtime.GOOS)
	return [2]*os.File{}
}
