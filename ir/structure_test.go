package ir

import "testing"

func TestStepFieldIndex(t *testing.T) {
	for i, f := range stepFields {
		if got := stepFieldIndex(f); got != i {
			t.Errorf("stepFieldIndex(%q) = %d, want %d", f, got, i)
		}
	}
	if stepFieldIndex("function") != -1 {
		t.Error("unknown field")
	}
}
