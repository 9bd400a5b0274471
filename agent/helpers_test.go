package agent

import (
	"testing"

	"github.com/stratum-go/stratum/expr"
)

// sampleRequest is a second attempt of a step with a contract.
func sampleRequest() Request {
	return Request{
		RunID:   "run-1",
		StepID:  "draft",
		Task:    "Write a short summary of README.md.",
		Agent:   "claude",
		Attempt: 2,
		Contract: &Contract{
			Name: "Draft",
			Fields: []Field{
				{Name: "summary", Type: "string"},
				{Name: "confidence", Type: "number"},
				{Name: "tags", Type: "string[]"},
				{Name: "level", Type: "low|high"},
				{Name: "findings", Type: "Finding[]"},
				{Name: "note", Type: "string?"},
			},
			Contracts: []Contract{{Name: "Finding", Fields: []Field{{Name: "line", Type: "integer"}, {Name: "ok", Type: "boolean"}}}},
		},
		PreviousFailure: &Failure{Attempt: 1, Reason: "ensure failed: result.confidence >= 0.8"},
	}
}

// argAfter returns the argument following flag, or "" if absent.
func argAfter(args []string, flag string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			return args[i+1]
		}
	}
	return ""
}

func hasArg(args []string, a string) bool {
	for _, x := range args {
		if x == a {
			return true
		}
	}
	return false
}

// encode renders a value of the expr model as compact JSON.
func encode(t *testing.T, v any) string {
	t.Helper()
	b, err := expr.EncodeJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
