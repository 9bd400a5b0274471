package ir

import (
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

func TestStepFieldLookup(t *testing.T) {
	lk := stepFieldLookup
	for i, f := range stepFieldTable {
		if got := lk.index(f.name); got != i {
			t.Errorf("index(%q) = %d, want %d", f.name, got, i)
		}
		if !strings.Contains(lk.names, " "+f.name+" ") {
			t.Errorf("names %q lacks %s", lk.names, f.name)
		}
	}
	for _, k := range []string{"", "function", "i", "ids", "ID", "dox", "agents", "Do", "o", "with_"} {
		if got := lk.index(k); got != -1 {
			t.Errorf("index(%q) = %d, want -1", k, got)
		}
	}
	if stepFieldTable[lk.out].name != "out" || stepFieldTable[lk.with].name != "with" {
		t.Error("out and with positions")
	}
}

// TestStepFieldsMatchTheDocs checks the table against the construct table
// of docs/spec-language.md, so that neither drifts.
func TestStepFieldsMatchTheDocs(t *testing.T) {
	src, err := os.ReadFile("../docs/spec-language.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `(do|set|gate|fanout|run|evaluate)[:` ][^|]*\\| ([^|]*) \\|")
	rows := row.FindAllStringSubmatch(string(src), -1)
	if len(rows) != 6 {
		t.Fatalf("found %d construct rows in docs/spec-language.md, want 6", len(rows))
	}
	for _, r := range rows {
		var kind StepKind
		for k := KindDo; k <= KindEvaluate; k++ {
			if k.String() == r[1] {
				kind = k
			}
		}
		var doc []string
		for _, f := range strings.Split(r[2], ",") {
			if f = strings.Trim(strings.TrimSpace(f), "`"); f != "" && f != "none" {
				doc = append(doc, f)
			}
		}
		sort.Strings(doc)
		got := strings.Split(strings.TrimPrefix(stepFieldLookup.accepts[kind], ", "), ", ")
		if got[0] == "" {
			got = nil
		}
		sort.Strings(got)
		if !slices.Equal(got, doc) {
			t.Errorf("%s takes %q in the table, %q in the docs", kind, got, doc)
		}
	}
}
