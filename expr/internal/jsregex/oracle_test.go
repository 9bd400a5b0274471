package jsregex

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "regenerate testdata/oracle.jsonl by asking node")

// oracleCase is one line of testdata/oracle.jsonl: a pattern that passes
// the shape filter, texts, and JavaScript's verdicts on them.
type oracleCase struct {
	Pattern string   `json:"pattern"`
	Texts   []string `json:"texts"`
	Syntax  *string  `json:"syntax,omitempty"`
	Results []bool   `json:"results,omitempty"`
}

const oracleFile = "oracle.jsonl"

// TestOracle compares Compile and matching with JavaScript's own RegExp (u
// flag) over hand-picked edge cases and a few thousand random patterns
// built from the dialect's tokens. The verdicts are recorded in testdata;
// -update regenerates them with node.
func TestOracle(t *testing.T) {
	path := filepath.Join("testdata", oracleFile)
	if *update {
		regenerate(t, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<24)
	n := 0
	for sc.Scan() {
		var c oracleCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		n++
		if err := Shape(c.Pattern); err != nil {
			t.Errorf("%q: the corpus holds only patterns the filter accepts: %v", c.Pattern, err)
			continue
		}
		re, err := Compile(c.Pattern, maxTestInput)
		if c.Syntax != nil {
			if err == nil {
				t.Errorf("%q: JavaScript refuses it (%s); Compile accepts it as %s", c.Pattern, *c.Syntax, re)
			}
			continue
		}
		if err != nil {
			var ue *UnsupportedError
			if !errors.As(err, &ue) {
				t.Errorf("%q: JavaScript accepts it; Compile: %v", c.Pattern, err)
			}
			continue
		}
		for i, text := range c.Texts {
			if got := re.MatchString(text); got != c.Results[i] {
				t.Errorf("%q on %.40q: JavaScript %v, ours %v (translated to %s)", c.Pattern, text, c.Results[i], got, re)
			}
		}
	}
	if n < 1000 {
		t.Errorf("only %d oracle cases", n)
	}
}

const maxTestInput = 4096

func regenerate(t *testing.T, path string) {
	var in bytes.Buffer
	for _, c := range oracleCases() {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		in.Write(b)
		in.WriteByte('\n')
	}
	cmd := exec.Command("node", filepath.Join("testdata", "oracle.js"))
	cmd.Stdin = &in
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// oracleCases lists the edge cases, then random patterns.
func oracleCases() []oracleCase {
	long := func(s string, n int) string { return strings.Repeat(s, n) }
	std := []string{"", "a", "aa", "ab", "A1", "abc", "x\ny", "\u2028", "😀", "～", "é", " \t"}
	cases := []oracleCase{
		{Pattern: `^a{1001}$`, Texts: []string{long("a", 1001), long("a", 1000), long("a", 1002)}},
		{Pattern: `^a{999,1001}$`, Texts: []string{long("a", 998), long("a", 999), long("a", 1001), long("a", 1002)}},
		{Pattern: `^a{1500,}$`, Texts: []string{long("a", 1499), long("a", 1500), long("a", 4096)}},
		{Pattern: `^a{0,2500}$`, Texts: []string{"", long("a", 2500), long("a", 2501)}},
		{Pattern: `a{5000}`, Texts: []string{long("a", 4096), ""}},
		{Pattern: `^(ab){1200}$`, Texts: []string{long("ab", 1200), long("ab", 1199)}},
		{Pattern: `^(){5000}$`, Texts: []string{"", "a"}},
		{Pattern: `^(^){3}a`, Texts: []string{"a", "ba"}},
		{Pattern: `^a{2147483648}`, Texts: []string{"a"}},
		{Pattern: `a{99999999999,1}`, Texts: []string{"a"}},
		{Pattern: `a{3,2}`, Texts: []string{"aaa"}},
		{Pattern: `^[a-z]{1,4096}$`, Texts: []string{long("q", 4096), ""}},
		{Pattern: `^.{4096}$`, Texts: []string{long("😀", 2048), long("😀", 4096), long("x", 4096)}},
		{Pattern: `\u{41}`, Texts: []string{"A", "a"}},
		{Pattern: `\u{0041}B`, Texts: []string{"AB"}},
		{Pattern: `^.$`, Texts: []string{"😀", "\n", "\r", "\u2028", "\u2029", "\u0085", "a"}},
		{Pattern: `^\s$`, Texts: []string{" ", "\t", "\u000b", "\u000c", "\u00a0", "\u1680", "\u2000", "\u200a", "\u200b", "\u2028", "\u202f", "\u205f", "\u3000", "\ufeff", "\u0085", "\u180e", "x"}},
		{Pattern: `^\S$`, Texts: []string{" ", "\u0085", "x", "\ufeff"}},
		{Pattern: `^\w+$`, Texts: []string{"abc_1", "é", "ſ", "K"}},
		{Pattern: `\bé`, Texts: []string{"é", "aé", " é"}},
		{Pattern: `^\d$`, Texts: []string{"1", "٣", "１"}},
		{Pattern: `a$`, Texts: []string{"a", "a\n", "ab"}},
		{Pattern: `^b`, Texts: []string{"b", "a\nb"}},
		{Pattern: `[\p{L}]`, Texts: []string{"é", "1", "😀", "Ω"}},
		{Pattern: `[\p{Lu}]`, Texts: []string{"A", "a", "Ω", "ω"}},
		{Pattern: `[\P{L}]`, Texts: []string{"a", "1"}},
		{Pattern: `[\p{Script=Greek}]`, Texts: []string{"α", "a"}},
		{Pattern: `[\p{sc=Latin}]`, Texts: []string{"α", "a"}},
		{Pattern: `[\p{gc=Nd}]`, Texts: []string{"٣", "a"}},
		{Pattern: `[\p{Alphabetic}]`, Texts: []string{"ª", "1", "Ⅻ"}},
		{Pattern: `[\p{Lowercase}]`, Texts: []string{"ª", "A", "a"}},
		{Pattern: `[\p{Any}]`, Texts: []string{"", "x"}},
		{Pattern: `[\p{ASCII}]`, Texts: []string{"é", "~"}},
		{Pattern: `[\p{Assigned}]`, Texts: []string{"\U000E0080", "a"}},
		{Pattern: `[\p{C}]`, Texts: []string{"\U000E0080", "\u0001", "a"}},
		{Pattern: `[\p{White_Space}]`, Texts: []string{"\u0085", " "}},
		{Pattern: `[\p{Other_Alphabetic}]`, Texts: []string{"a"}},
		{Pattern: `[\p{Foo}]`, Texts: []string{"a"}},
		{Pattern: `[\p{Letter}]`, Texts: []string{"a", "1"}},
		{Pattern: `[\p{L=Lu}]`, Texts: []string{"a"}},
		{Pattern: `[\p{General_Category=Lu}]`, Texts: []string{"A", "a"}},
		{Pattern: `[\p{punct}]`, Texts: []string{"!", "a"}},
		{Pattern: `[\p{Script_Extensions=Greek}]`, Texts: []string{"α"}},
		{Pattern: `[\p{scx=Latn}]`, Texts: []string{"α"}},
		{Pattern: `[\uD83D\uDE00-\uD83D\uDE4F]`, Texts: []string{"😀", "😐", "🙏", "a"}},
		{Pattern: `[\uD83D]`, Texts: []string{"😀", "\ufffd"}},
		{Pattern: `\uD83D`, Texts: []string{"😀"}},
		{Pattern: `[😀-😂]`, Texts: []string{"😁", "a"}},
		{Pattern: `^[^]$`, Texts: []string{"\n", "😀", ""}},
		{Pattern: `[]`, Texts: []string{"", "a"}},
		{Pattern: `[\b]`, Texts: []string{"\b", "b"}},
		{Pattern: `\cJ`, Texts: []string{"\n", "J"}},
		{Pattern: `[\cJ]`, Texts: []string{"\n"}},
		{Pattern: `\c1`, Texts: []string{"x"}},
		{Pattern: `[\c1]`, Texts: []string{"x"}},
		{Pattern: `\0`, Texts: []string{"\x00", "0"}},
		{Pattern: `\00`, Texts: []string{"\x00"}},
		{Pattern: `[\0]`, Texts: []string{"\x00"}},
		{Pattern: `\x4A`, Texts: []string{"J"}},
		{Pattern: `\x4`, Texts: []string{"J"}},
		{Pattern: `\a`, Texts: []string{"a"}},
		{Pattern: `\-`, Texts: []string{"-"}},
		{Pattern: `[\-]`, Texts: []string{"-"}},
		{Pattern: `\/`, Texts: []string{"/"}},
		{Pattern: `/`, Texts: []string{"/"}},
		{Pattern: `a}`, Texts: []string{"a}"}},
		{Pattern: `a]`, Texts: []string{"a]"}},
		{Pattern: `[a-]`, Texts: []string{"-", "b"}},
		{Pattern: `[-a]`, Texts: []string{"-"}},
		{Pattern: `[--0]`, Texts: []string{".", "0", "-", "1"}},
		{Pattern: `[a-c-e]`, Texts: []string{"d", "-", "e"}},
		{Pattern: `[\w-z]`, Texts: []string{"-"}},
		{Pattern: `[a-\d]`, Texts: []string{"-"}},
		{Pattern: `[\d-]`, Texts: []string{"-", "1"}},
		{Pattern: `[z-a]`, Texts: []string{"a"}},
		{Pattern: `[[]`, Texts: []string{"["}},
		{Pattern: `[\]]`, Texts: []string{"]"}},
		{Pattern: `^*`, Texts: []string{"a"}},
		{Pattern: `$+`, Texts: []string{"a"}},
		{Pattern: `\b?`, Texts: []string{"a"}},
		{Pattern: `\B{2}`, Texts: []string{"a"}},
		{Pattern: `(a)`, Texts: []string{"a"}},
		{Pattern: `()`, Texts: []string{""}},
		{Pattern: `a|`, Texts: []string{"", "b"}},
		{Pattern: `|`, Texts: []string{""}},
		{Pattern: `\k<a>`, Texts: []string{"k"}},
		{Pattern: `\k`, Texts: []string{"k"}},
		{Pattern: `a*?b`, Texts: []string{"aab"}},
		{Pattern: `a{2}?`, Texts: []string{"aa"}},
		{Pattern: `\u12`, Texts: []string{"x"}},
		{Pattern: `\u{110000}`, Texts: []string{"x"}},
		{Pattern: `\u{}`, Texts: []string{"x"}},
		{Pattern: `\p`, Texts: []string{"p"}},
		{Pattern: `[\p]`, Texts: []string{"p"}},
		{Pattern: `\e`, Texts: []string{"e"}},
		{Pattern: `[\e]`, Texts: []string{"e"}},
		{Pattern: `[\B]`, Texts: []string{"B"}},
		{Pattern: `\ `, Texts: []string{" "}},
		{Pattern: `\_`, Texts: []string{"_"}},
		{Pattern: `\.\*\+\?\^\$\|\[\]\{\}\(\)\\`, Texts: []string{`.*+?^$|[]{}()\`}},
		{Pattern: `^A[a-z]+$`, Texts: []string{"Abc", "abc", "A"}},
		{Pattern: `.*error.*`, Texts: []string{"an error here", "none"}},
		{Pattern: `(foo|bar)baz`, Texts: []string{"barbaz", "baz"}},
		{Pattern: `\d{3}-\d{4}`, Texts: []string{"555-1234", "55-1234"}},
		{Pattern: `^x{1,3}$`, Texts: []string{"xxx", "xxxx"}},
	}
	kept := cases[:0]
	for _, c := range cases {
		if Shape(c.Pattern) == nil { // the others never reach Compile
			c.Texts = append(c.Texts, std...)
			kept = append(kept, c)
		}
	}
	cases = kept
	toks := []string{`a`, `b`, `.`, `\d`, `\w`, `\s`, `\S`, `\W`, `\D`, `\b`, `\B`, `^`, `$`, `[a-c]`, `[^a]`, `[\d_]`,
		`(`, `)`, `|`, `*`, `+`, `?`, `{2}`, `{1,3}`, `{0,}`, `}`, `]`, `\.`, `\-`, `\a`, `[\-]`, `\u0041`, `\x41`,
		`\cA`, `\0`, "😀", "é", `\u{41}`, `[\u{1F600}]`, `\/`, `-`, ` `, "\n", `\t`, `[\s\S]`, `[\b]`, `[\p{Lu}]`,
		`[\P{L}]`, `*?`, `[z-a]`, `[\w-z]`, `\k`, `[^]`, `[]`, `[\]]`, `[a-]`, `\c1`, `\01`, `\x4`, `\uD83D\uDE00`,
		`\uD83D`, `[\cA]`, `[\c_]`, `\_`, `A`, `～`, `{3,2}`, `[.]`, `[$^]`, `\$`, `\(`, `\)`, `\{`, `\}`, `\|`, `\\`}
	alpha := []string{"a", "b", "c", "A", "_", "1", " ", "\n", "\r", "\u2028", "\u00a0", "\ufeff", "\u0085", "é",
		"😀", "～", ".", "-", "\t", "\b", "\x00", "x", "/", "\x01", "\u000b", "Ω", "$", "^", "\\", "}", "]"}
	rnd := rand.New(rand.NewSource(1))
	for n := 0; n < 1500; {
		var sb strings.Builder
		for range 1 + rnd.Intn(6) {
			sb.WriteString(toks[rnd.Intn(len(toks))])
		}
		if Shape(sb.String()) != nil {
			continue
		}
		n++
		c := oracleCase{Pattern: sb.String()}
		for range 6 {
			var tb strings.Builder
			for range rnd.Intn(7) {
				tb.WriteString(alpha[rnd.Intn(len(alpha))])
			}
			c.Texts = append(c.Texts, tb.String())
		}
		cases = append(cases, c)
	}
	return cases
}
