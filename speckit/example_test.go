package speckit

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestExampleUpToDate keeps examples/speckit/tasks.yaml equal to what the
// compiler makes of examples/speckit/tasks (rewritten with -update).
func TestExampleUpToDate(t *testing.T) {
	dir := filepath.Join("..", "examples", "speckit")
	res, err := Compile(context.Background(), filepath.Join(dir, "tasks"), "")
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join(dir, "tasks.yaml")
	if *update {
		if err := os.WriteFile(golden, res.YAML, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(res.YAML)); diff != "" {
		t.Errorf("%s is stale (-want +got):\n%s", golden, diff)
	}
}
