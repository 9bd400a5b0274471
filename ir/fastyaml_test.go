package ir

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dumpTree renders a loaded tree with positions, for comparing the fast
// and general YAML paths.
func dumpTree(n *node) string {
	var b strings.Builder
	var walk func(n *node, ind string)
	walk = func(n *node, ind string) {
		switch n.kind {
		case mapNode:
			fmt.Fprintf(&b, "%smap @%d:%d\n", ind, n.line, n.col)
			for i, k := range n.keys() {
				fmt.Fprintf(&b, "%s key %q @%d:%d\n", ind, k.str, k.line, k.col)
				walk(n.vals()[i], ind+"  ")
			}
		case listNode:
			fmt.Fprintf(&b, "%slist @%d:%d\n", ind, n.line, n.col)
			for _, it := range n.items() {
				walk(it, ind+"  ")
			}
		default:
			fmt.Fprintf(&b, "%s%v %q %v %v @%d:%d\n", ind, n.kind, n.str, n.num, n.b, n.line, n.col)
		}
	}
	walk(n, "")
	return b.String()
}

// checkFastAgrees fails when the fast path accepts src but yields a tree
// different from yaml.v3's (or yaml.v3 rejects it).
func checkFastAgrees(t *testing.T, src []byte) bool {
	t.Helper()
	fast := fastParse(src)
	if fast == nil {
		return false
	}
	var d diags
	general := loadYAML(src, &d)
	if general == nil {
		t.Fatalf("fast path accepted what yaml.v3 rejects: %v\n%s", d.list, src)
	}
	if f, g := dumpTree(fast), dumpTree(general); f != g {
		t.Fatalf("fast and general trees differ for:\n%s\n--- fast\n%s--- general\n%s", src, f, g)
	}
	return true
}

func TestFastYAMLAgreesWithYAMLv3(t *testing.T) {
	var files []string
	for _, pattern := range []string{"testdata/conformance/*.yaml", "testdata/golden/*.yaml", "../examples/*.yaml"} {
		m, _ := filepath.Glob(pattern)
		files = append(files, m...)
	}
	accepted := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if checkFastAgrees(t, src) {
			accepted++
		}
	}
	// Both styles of step list take the fast path.
	for _, src := range [][]byte{linearSpec(50), linearFlowSpec(50)} {
		if !checkFastAgrees(t, src) {
			t.Errorf("fast path refused a generated spec:\n%s", src[:200])
		}
	}
	// The fast path must actually serve ordinary specs.
	if accepted < len(files)*3/4 {
		t.Errorf("fast path accepted only %d of %d corpus files", accepted, len(files))
	}
	for _, src := range []string{
		"a:\nb: 1\n", "a:\n  - x\n  -\n  - y: \nc: ~\n", "- a: 1\n  b:\n- ", "k: [a, {b: c}, []]\n", "k: 'it''s'  # c\n",
		"a: b # c\n", "a:    \n", "key with spaces: v\n", "\"q k\": 1\n", "a:\n- 1\n- 2\nb: x\n", "  a: 1\n  b: 2\n",
		"a: http://x\n", "a: -1\n", "a: [-1, .5, ~, true, 'x', \"y\"]\n", "a: {}\nb: []\n", "é: ü\nx: [é, ü]\n",
		"a:\n  b:\n    c: 1\n  d: 2\n", "- - a\n", "a: b: c\n", "a: |\n  x\n", "a: &x 1\n", "a: \"\\n\"\n", "a\n", "",
		"a: 1\n  b: 2\n", "a: [1,\n 2]\n", "a: b\n c\n", "a: {x: 1, x: 2}\n", "a: 1\na: 2\n", "---\na: 1\n", "a: [a, ]\n",
		// Implicit keys are limited to 1024 characters, block and flow.
		strings.Repeat("k", 1024) + ": 1\n", strings.Repeat("k", 1025) + ": 1\n", strings.Repeat("k", 1020) + "     : 1\n",
		"'" + strings.Repeat("q", 1022) + "': 1\n", "'" + strings.Repeat("q", 1023) + "': 1\n",
		"- " + strings.Repeat("k", 1025) + ": 1\n", "a: {" + strings.Repeat("k", 1025) + ": 1}\n", "a: {" + strings.Repeat("k", 1024) + ": 1}\n",
		"1.0: a\n1: b\n", "~: a\nnull: b\n", "0x1: a\n", "a: {1.0: x, '1': y}\n",
		// Flow collections as sequence entries (the flow style of step lists).
		"- {id: a, do: x}\n- {id: b, do: \"y ${a.output}\", after: [a]}\n", "a:\n  - {x: 1}  # c\n  - [1, {y: 2}]\n  - {}\n",
		"- {a: 1}: b\n", "- {a: 1}\n  b: 2\n", "- {a: 1} x\n", "- [a, b]: c\n", "- {a: 1,\n  b: 2}\n", "- {a: b: c}\n",
		"- {a: 1, a: 2}\n", "-  {a: 1}\n-   [b]\n", "- - {a: 1}\n", "a:\n- {b: 1}\nc: 2\n", "- {\"k\": 'v'}\n",
		// YAML reads U+2028 and U+2029 as line breaks.
		"a: x\u2028y\n", "a: 'x\u2029y'\n", "a: [x\u2028y]\n", "a\u2028: 1\n",
	} {
		checkFastAgrees(t, []byte(src))
	}
}

// FuzzFastYAML checks the fast path against yaml.v3 on arbitrary input.
func FuzzFastYAML(f *testing.F) {
	for _, pattern := range []string{"testdata/conformance/*.yaml", "../examples/*.yaml"} {
		m, _ := filepath.Glob(pattern)
		for _, file := range m {
			src, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(src)
		}
	}
	f.Add([]byte("a:\n  - x\n  -\n  - y: \nc: ~\n"))
	f.Add([]byte("k: [a, {b: c}, []]\n"))
	f.Add([]byte("- {id: a, do: x}\n- [b, {c: d}]\n"))
	f.Add(linearFlowSpec(3))
	f.Fuzz(func(t *testing.T, src []byte) { checkFastAgrees(t, src) })
}

// TestFastYAMLRandomDocuments compares both paths on documents assembled
// from YAML-ish fragments, which reach the corners of the fast path (odd
// indentation, colons, quotes, flows, comments) far more often than byte
// mutations do. FAST_YAML_SAMPLES raises the count for a longer soak.
func TestFastYAMLRandomDocuments(t *testing.T) {
	samples := 3000
	if s := os.Getenv("FAST_YAML_SAMPLES"); s != "" {
		fmt.Sscan(s, &samples)
	}
	frags := []string{"a", "b", "key", "k k", "-", "- ", ":", ": ", "#", " #c", "'", "''", "\"", "\"x\"", "'y'", "[", "]", "{", "}",
		", ", ",", "1", "-1", ".5", "0x1", "017", "~", "null", "true", "yes", "é", "${a.output}", "x: y", "[a, b]", "{a: 1}",
		"?", "http://x", "a#b", " ", "  ", "[]", "{}", "'it''s'", "\"a: b\"", "---", "...",
		"{id: a, do: x}", "{a: [1, {b: c}]}", "[{a: 1}, b]", "{a: 'x, y'}", "{a: \"${b.output}\"}"}
	rng := uint64(12345)
	if s := os.Getenv("FAST_YAML_SEED"); s != "" {
		fmt.Sscan(s, &rng)
	}
	next := func(n int) int {
		rng ^= rng << 13
		rng ^= rng >> 7
		rng ^= rng << 17
		return int(rng % uint64(n))
	}
	accepted := 0
	for range samples {
		var b strings.Builder
		lines := 1 + next(6)
		for range lines {
			b.WriteString(strings.Repeat(" ", next(3)*2+next(2)*next(2)))
			switch next(3) {
			case 0: // a mapping entry
				b.WriteString(frags[next(len(frags))])
				b.WriteString(": ")
				for range next(3) {
					b.WriteString(frags[next(len(frags))])
				}
			case 1: // a sequence entry
				b.WriteString("- ")
				for range next(3) {
					b.WriteString(frags[next(len(frags))])
				}
			default:
				for range 1 + next(4) {
					b.WriteString(frags[next(len(frags))])
				}
			}
			b.WriteByte('\n')
		}
		if checkFastAgrees(t, []byte(b.String())) {
			accepted++
		}
	}
	t.Logf("fast path accepted %d of %d", accepted, samples)
	if accepted == 0 {
		t.Error("the fast path accepted no random document")
	}
}
