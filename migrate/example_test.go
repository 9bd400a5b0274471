package migrate

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLegacyExamples checks that the shipped legacy examples are read as
// legacy documents and report what docs/migrate.md says they do.
func TestLegacyExamples(t *testing.T) {
	tests := map[string][]string{
		"review-v02.yaml": {idContracts, idFunctionInfer, idEnsureExpressions, idFunctionGate, idFlowOutput, idInline, idIterate, idDependsOn, idMissingMaxRounds},
		"tasks-v03.yaml":  {idMaxRounds, idInline, idDecompose, idContracts, idParallelDispatch, idParallelUnsupported, idDependsOn, idOnFail},
	}
	for name, want := range tests {
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("..", "examples", "legacy", name))
			if err != nil {
				t.Fatal(err)
			}
			r := Check(src)
			if !r.HasVersion {
				t.Fatal("no version read")
			}
			if diff := cmp.Diff(want, findingIDs(r)); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}
