package ir

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeSpecsValidate keeps the specs shown in README.md honest: every
// ```yaml block that is a v1 spec must validate.
func TestReadmeSpecsValidate(t *testing.T) {
	src, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(src), "```yaml\n")
	checked := 0
	for _, b := range blocks[1:] {
		body, _, ok := strings.Cut(b, "```")
		if !ok {
			t.Fatal("README.md has an unterminated ```yaml block")
		}
		if !strings.HasPrefix(body, "version: 1") {
			continue
		}
		checked++
		if ds := Validate([]byte(body)); len(ds) > 0 {
			t.Errorf("a README spec does not validate:\n%s\n%v", body, ds)
		}
	}
	if checked == 0 {
		t.Error("README.md shows no v1 spec; this test would check nothing")
	}
}
