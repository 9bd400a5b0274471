package ir

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/stratum-go/stratum/expr"
)

// checkJSONAgrees fails when the JSON fast path accepts src but yields a
// tree different from yaml.v3's, or Build gives a different plan or
// different diagnostics than with yaml.v3 alone. It reports whether the
// fast path accepted.
func checkJSONAgrees(t *testing.T, src []byte) bool {
	t.Helper()
	fast := fastJSON(src)
	if fast == nil {
		return false
	}
	var d diags
	general := loadSlow(src, &d)
	if general == nil {
		// Only for JSON's escapes yaml.v3 lacks: then the same values as
		// yaml.v3 reads from the text with those written its way.
		yamlish, ok := yamlEscapes(src)
		var d2 diags
		if !ok || loadSlow(yamlish, &d2) == nil {
			t.Fatalf("fast path accepted what yaml.v3 rejects: %v\n%.300s", d.list, src)
		}
		if f, g := nodeValue(fast), nodeValue(loadSlow(yamlish, &d2)); !reflect.DeepEqual(f, g) {
			t.Fatalf("fast path and yaml.v3 read different values for:\n%.300s\n--- fast\n%v\n--- yaml.v3\n%v", src, f, g)
		}
		return true
	}
	if f, g := dumpTree(fast), dumpTree(general); f != g {
		t.Fatalf("fast and general trees differ for:\n%.300s\n--- fast\n%.2000s--- general\n%.2000s", src, f, g)
	}
	fastPlan, fastDoc, fastDiags := BuildDocument(src)
	slowPlan, slowDoc, slowDiags := (&validator{slowLoad: true}).buildPlan(src, true)
	if !slices.Equal(fastDiags, slowDiags) {
		t.Fatalf("diagnostics differ for:\n%.300s\n--- fast\n%s--- general\n%s", src, formatDiags(fastDiags), formatDiags(slowDiags))
	}
	if !reflect.DeepEqual(fastPlan, slowPlan) || !reflect.DeepEqual(fastDoc, slowDoc) {
		t.Fatalf("plans differ for:\n%.300s", src)
	}
	return true
}

// yamlEscapes writes, in JSON text, the escapes yaml.v3 lacks as YAML
// escapes of the same characters: \/ as a slash, a surrogate pair as
// \UXXXXXXXX. ok is false when the text holds none. (Backslashes appear
// only in strings of a JSON text, so the escapes are read in order.)
func yamlEscapes(src []byte) (out []byte, ok bool) {
	for i := 0; i < len(src); i++ {
		if src[i] != '\\' || i+1 >= len(src) {
			out = append(out, src[i])
			continue
		}
		switch {
		case src[i+1] == '/':
			out, ok = append(out, '/'), true
			i++
			continue
		case src[i+1] == 'u' && i+12 <= len(src) && src[i+6] == '\\' && src[i+7] == 'u':
			hi, err1 := strconv.ParseUint(string(src[i+2:i+6]), 16, 32)
			lo, err2 := strconv.ParseUint(string(src[i+8:i+12]), 16, 32)
			if err1 == nil && err2 == nil && hi >= 0xD800 && hi <= 0xDBFF && lo >= 0xDC00 && lo <= 0xDFFF {
				out, ok = fmt.Appendf(out, `\U%08X`, utf16.DecodeRune(rune(hi), rune(lo))), true
				i += 11
				continue
			}
		}
		out = append(out, src[i], src[i+1])
		i++
	}
	return out, ok
}

// TestFastJSONEscapesYAMLLacks: a JSON spec with \/ or a surrogate pair
// escaped loads, with the characters they stand for, and builds as the
// same spec with the characters written raw; yaml.v3 alone refuses it.
func TestFastJSONEscapesYAMLLacks(t *testing.T) {
	spec := func(do string) []byte {
		return []byte(`{"version":1,"contracts":{"V":{"v":"string"}},"flows":{"entry":"main","main":{"input":{},` +
			`"output":{"from":"${s1.output}","contract":"V"},"steps":[{"id":"s1","do":"` + do + `","out":"V"}]}}}`)
	}
	for name, c := range map[string]struct{ escaped, raw string }{
		"slash":          {`a\/b`, `a/b`},
		"surrogate pair": {`smile \ud83d\ude00 and \uD83D\uDE00`, `smile 😀 and 😀`},
		"both, with an escaped backslash before a slash": {`\\\/\ud83d\ude00\\`, `\\/😀\\`},
	} {
		t.Run(name, func(t *testing.T) {
			if !checkJSONAgrees(t, spec(c.escaped)) {
				t.Fatal("the fast path gave up")
			}
			plan, diagsEscaped := Build(spec(c.escaped))
			want, diagsRaw := Build(spec(c.raw))
			if len(diagsEscaped) != 0 || len(diagsRaw) != 0 {
				t.Fatalf("diagnostics:\n%s--- raw\n%s", formatDiags(diagsEscaped), formatDiags(diagsRaw))
			}
			if got, want := plan.Flow("main").Steps[0].Do.Text, want.Flow("main").Steps[0].Do.Text; got != want {
				t.Fatalf("do %q, want %q", got, want)
			}
			var d diags
			if loadSlow(spec(c.escaped), &d) != nil {
				t.Fatal("yaml.v3 loaded it: the fast path's reading is not needed")
			}
		})
	}
}

// jsonCorpus is the conformance corpus, the golden specs and the examples
// as JSON: compact as a run's snapshot is written, and indented.
func jsonCorpus(tb testing.TB) [][]byte {
	tb.Helper()
	var out [][]byte
	for _, pattern := range []string{"testdata/conformance/*.yaml", "testdata/extra/*.yaml", "testdata/golden/*.yaml", "../examples/*.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				tb.Fatal(err)
			}
			var d diags
			root := loadSlow(src, &d)
			if root == nil {
				continue
			}
			compact, err := expr.EncodeJSON(nodeValue(root))
			if err != nil {
				continue // .inf or .nan: no JSON form
			}
			var indented bytes.Buffer
			if err := json.Indent(&indented, compact, "", "  "); err != nil {
				tb.Fatal(err)
			}
			out = append(out, compact, indented.Bytes())
		}
	}
	return out
}

func TestFastJSONCorpus(t *testing.T) {
	corpus := jsonCorpus(t)
	accepted := 0
	for _, src := range corpus {
		if checkJSONAgrees(t, src) {
			accepted++
		}
	}
	// Only documents with a character YAML reads otherwise may miss it.
	if accepted < len(corpus)*9/10 {
		t.Errorf("the fast path accepted only %d of %d JSON documents", accepted, len(corpus))
	}
	t.Logf("accepted %d of %d", accepted, len(corpus))
}

func TestFastJSONSnapshot(t *testing.T) {
	for _, src := range [][]byte{auditSpec(10000), linearSpec(300), fanInSpec(50), reviseFanSpec(50)} {
		snap := specSnapshot(t, src)
		if !checkJSONAgrees(t, snap) {
			t.Fatalf("the fast path refused a snapshot: %.200s", snap)
		}
		p, ds := Build(snap)
		if len(ds) > 0 {
			t.Fatal(formatDiags(ds))
		}
		want, _ := Build(src)
		if got, want := p.EntryFlow().Order, want.EntryFlow().Order; !slices.Equal(got, want) {
			t.Fatal("the snapshot compiles to another plan than its source")
		}
	}
}

func nested(depth int, open, close, leaf string) string {
	return strings.Repeat(open, depth-1) + leaf + strings.Repeat(close, depth-1)
}

// jsonCase is a document the fast path must take (fast) or leave to
// yaml.v3, and a diagnostic code Build must then give.
type jsonCase struct {
	name string
	src  string
	fast bool
	code string
}

func jsonCases() []jsonCase {
	step := `{"version":1,"contracts":{"V":{"v":"string"}},"flows":{"entry":"main","main":{"input":{},"output":{"from":"${s.output}","contract":"V"},"steps":[{"id":"s","do":%s,"out":"V"}]}}}`
	spec := func(do string) string { return fmt.Sprintf(step, do) }
	manyKeys := func(n int, last string) string {
		var b strings.Builder
		b.WriteByte('{')
		for i := range n {
			fmt.Fprintf(&b, `"k%d":%d,`, i, i)
		}
		return b.String() + last + "}"
	}
	return []jsonCase{
		{"minimal spec", spec(`"x"`), true, ""},
		{"indented", "{\n  \"a\": [\n    1,\n    {\"b\": null}\n  ],\n  \"c\": {}\n}\n", true, ""},
		{"surrounding whitespace", "\n\n   {\"a\": 1}   \n\n", true, ""},
		{"values after newlines", "{\"a\":\n1,\"b\": \n [\n1\n,\n2\n]\n,\n\"c\":\n{}}", true, ""},
		{"newline before a colon", "{\"a\":1,\n\"b\"\n:2}", false, CodeYAMLSyntax},
		{"lines at column one", "[\n1,\n{\n\"a\": [\n]\n}\n]", true, ""},
		{"unicode escapes", `{"a":"\u00e9\u00E9\u4e2d\u0041\u0000\uFFFD\uffff"}`, true, ""},
		{"escapes", `{"a":"\"\\\b\f\n\r\t"}`, true, ""},
		{"escape in a key", `{"\u0061\n":1}`, true, ""},
		{"lone surrogate escape", `["\udc00"]`, false, CodeYAMLSyntax},
		{"lone high surrogate escape", `["\ud83d"]`, false, CodeYAMLSyntax},
		{"high surrogate before another escape", `["\ud83d\n"]`, false, CodeYAMLSyntax},
		{"two high surrogates", `["\ud83d\ud83d"]`, false, CodeYAMLSyntax},
		{"raw non-ASCII", `{"é":"ü😀","x":["中文",1],"y":"é"}`, true, ""},
		{"raw non-ASCII indented", "{\n \"é\": \"ü😀\",\n \"x\": [\"中文\", {\"ü\": 1}]}", true, ""},
		{"raw replacement character", "{\"a\":\"\uFFFD\"}", true, ""},
		{"raw C1 control", "{\"a\":\"\u0085\u0090\"}", false, ""},
		{"raw noncharacter", "{\"a\":\"\uFFFE\"}", false, CodeYAMLSyntax},
		{"raw byte-order mark inside", "{\"a\":\"\uFEFF\"}", false, ""},
		{"raw line separator", "{\"a\":\"x\u2028y\"}", false, ""},
		{"raw DEL", "{\"a\":\"x\x7fy\"}", false, CodeYAMLSyntax},
		{"YAML-only escape", `{"a":"\x41"}`, false, ""},
		{"spec with escapes", spec(`"\u00e9 ${input.q}"`), true, CodeUnknownPath},
		{"integers", `[0,-0,1,-1,123456789,9007199254740993]`, true, ""},
		{"floats", `[1.5,-0.25,1e3,1E+3,1e-7,-1.25E-7,0.0]`, true, ""},
		{"big numbers", `[12345678901234567890123,1e400,-1e400,1e-400]`, true, ""},
		{"leading zero", `[01]`, false, ""},
		{"trailing dot", `[1.]`, false, ""},
		{"leading dot", `[.5]`, false, ""},
		{"plus sign", `[+1]`, false, ""},
		{"hex", `[0x10]`, false, ""},
		{"number then letter", `[1x]`, false, ""},
		{"literals", `[true,false,null]`, true, ""},
		{"bad literal", `[nul]`, false, ""},
		{"literal then letter", `[truex]`, false, ""},
		{"nulls", `{"a":null,"b":[null],"c":{"d":null}}`, true, ""},
		{"null root", `null`, true, CodeSchemaInvalid},
		{"string root", `"a: b"`, true, CodeSchemaInvalid},
		{"number root", `1.5`, true, CodeSchemaInvalid},
		{"empty collections", `{"a":{},"b":[],"c":[{}],"d":[[]],"e":{ },"f":[ ]}`, true, ""},
		{"empty root object", `{}`, true, CodeSchemaInvalid},
		{"empty root array", `[]`, true, CodeSchemaInvalid},
		{"duplicate key", `{"a":1,"a":2}`, false, CodeYAMLDuplicateKey},
		{"duplicate key through an escape", `{"a":1,"\u0061":2}`, false, CodeYAMLDuplicateKey},
		{"duplicate key among many", manyKeys(40, `"k7":0`), false, CodeYAMLDuplicateKey},
		{"many keys", manyKeys(40, `"k40":0`), true, ""},
		{"nested duplicate key", `{"a":{"b":1,"c":{"b":2},"b":3}}`, false, CodeYAMLDuplicateKey},
		{"merge key is a key", `{"<<":{"a":1},"b":{"<<":[{"c":2}]}}`, true, ""},
		{"YAML indicators in strings", `{"&a":"*a","!t":"%x","#":"- x","? k":": v","|":">"}`, true, ""},
		{"same key in siblings", `[{"a":1},{"a":2}]`, true, ""},
		{"deepest lists", nested(MaxNesting, "[", "]", "[1]"), true, ""},
		{"lists too deep", nested(MaxNesting+1, "[", "]", "[1]"), false, CodeYAMLLimit},
		{"deepest mappings", nested(MaxNesting, `{"a":`, "}", `{"a":1}`), true, ""},
		{"mappings too deep", nested(MaxNesting+1, `{"a":`, "}", `{"a":1}`), false, CodeYAMLLimit},
		{"longest key", `{"` + strings.Repeat("k", maxSimpleKey-2) + `":1}`, true, ""},
		{"key too long", `{"` + strings.Repeat("k", maxSimpleKey-1) + `":1}`, false, CodeYAMLSyntax},
		{"long key with space", `{"` + strings.Repeat("k", maxSimpleKey-3) + `" :1}`, true, ""},
		{"long key, space too many", `{"` + strings.Repeat("k", maxSimpleKey-2) + `" :1}`, false, CodeYAMLSyntax},
		{"long non-ASCII key", `{"` + strings.Repeat("é", maxSimpleKey-2) + `":1}`, false, ""},
		{"tab", "{\"a\":\t1}", false, ""},
		{"tab indentation", "{\n\t\"a\": 1\n}", false, ""},
		{"carriage returns", "{\r\n  \"a\": 1\r\n}\r\n", false, ""},
		{"byte-order mark", "\ufeff{\"a\":1}", false, ""},
		{"invalid UTF-8", "{\"a\":\"\xff\"}", false, ""},
		{"control character in a string", "{\"a\":\"x\x01\"}", false, ""},
		{"YAML flow mapping", `{a: 1}`, false, ""},
		{"trailing comma", `[1,]`, false, ""},
		{"missing comma", `[1 2]`, false, ""},
		{"extra closer", `{"a":1}}`, false, ""},
		{"unclosed", `{"a":[1`, false, ""},
		{"unterminated string", `{"a":"x`, false, ""},
		{"two documents", "{}\n---\n{}", false, ""},
		{"comment", "{\"a\":1} # c", false, ""},
		{"YAML document", "version: 1\n", false, ""},
		{"empty", "", false, ""},
		{"only spaces", "  \n ", false, ""},
	}
}

func TestFastJSONCases(t *testing.T) {
	for _, c := range jsonCases() {
		t.Run(c.name, func(t *testing.T) {
			src := []byte(c.src)
			if got := checkJSONAgrees(t, src); got != c.fast {
				t.Fatalf("fast path took it: %v, want %v", got, c.fast)
			}
			// Whichever path loads it, Build gives what yaml.v3 does.
			fastPlan, fastDoc, fastDiags := BuildDocument(src)
			slowPlan, slowDoc, slowDiags := (&validator{slowLoad: true}).buildPlan(src, true)
			if !slices.Equal(fastDiags, slowDiags) || !reflect.DeepEqual(fastPlan, slowPlan) || !reflect.DeepEqual(fastDoc, slowDoc) {
				t.Fatalf("Build differs from yaml.v3's:\n%s--- yaml.v3\n%s", formatDiags(fastDiags), formatDiags(slowDiags))
			}
			if c.code != "" && !slices.ContainsFunc(fastDiags, func(d Diagnostic) bool { return d.Code == c.code }) {
				t.Fatalf("want a %s diagnostic, got:\n%s", c.code, formatDiags(fastDiags))
			}
		})
	}
}

// TestFastJSONMaxNodes: yaml.v3's path counts the values (keys included)
// when the text holds a '*'; the fast path must refuse beyond the bound.
func TestFastJSONMaxNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("half a million values through yaml.v3")
	}
	doc := func(values int) []byte {
		// One list holding values-2 numbers and a string with a '*'.
		return []byte("[\"*\"" + strings.Repeat(",0", values-2) + "]")
	}
	for _, c := range []struct {
		values int
		fast   bool
	}{{MaxNodes, true}, {MaxNodes + 1, false}} {
		src := doc(c.values)
		if got := fastJSON(src) != nil; got != c.fast {
			t.Fatalf("%d values: fast path took it: %v, want %v", c.values, got, c.fast)
		}
		// yaml.v3's path refuses exactly when the fast path does.
		v := &validator{slowLoad: true}
		v.check(src)
		if slow := v.d.sorted(); slow.Has(CodeYAMLLimit, "") == c.fast {
			t.Fatalf("%d values: yaml.v3's path gave:\n%s", c.values, formatDiags(slow))
		}
	}
}

// randomJSON writes a random JSON value, mostly valid, with every kind of
// whitespace, escape and number the fast path must judge.
func randomJSON(b *strings.Builder, next func(int) int, depth int) {
	ws := func() {
		for range next(3) {
			b.WriteString([]string{" ", "\n", "  ", "\n  ", " ", "\t", "\r\n"}[next(7)*min(1, next(8))])
		}
	}
	strs := []string{"a", "b", "é", "😀", "${a.output}", `\"`, `\\`, `\n`, `\u00e9`, `\u0041`, `\/`, `\ud83d\ude00`, `\u2028`, "\u2028",
		`\x41`, " ", ": ", "#", "'", "id", "do", "steps", "", "\x7f", `\t`, "a b", "中"}
	ws()
	if depth > 4 {
		depth = 99 // leaves only
	}
	switch k := next(9); {
	case k == 0 && depth < 99:
		b.WriteByte('{')
		n := next(4)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			ws()
			b.WriteString(`"` + strs[next(len(strs))] + `"`)
			ws()
			b.WriteByte(':')
			randomJSON(b, next, depth+1)
		}
		ws()
		b.WriteByte('}')
	case k == 1 && depth < 99:
		b.WriteByte('[')
		for i := range next(4) {
			if i > 0 {
				b.WriteByte(',')
			}
			randomJSON(b, next, depth+1)
		}
		ws()
		b.WriteByte(']')
	case k == 2:
		b.WriteString([]string{"0", "-0", "1", "-12", "1.5", "1e3", "1E-3", "1e400", "12345678901234567890", "01", "1.", ".5", "+1"}[next(13)])
	case k == 3:
		b.WriteString([]string{"true", "false", "null", "nul", "True"}[next(5)])
	default:
		b.WriteByte('"')
		for range next(4) {
			b.WriteString(strs[next(len(strs))])
		}
		b.WriteByte('"')
	}
	ws()
}

// TestFastJSONRandomDocuments compares both paths on random JSON-like
// documents, which reach the fast path's refusals far more often than byte
// mutations do. FAST_JSON_SAMPLES raises the count for a longer soak.
func TestFastJSONRandomDocuments(t *testing.T) {
	samples := 3000
	if s := os.Getenv("FAST_JSON_SAMPLES"); s != "" {
		fmt.Sscan(s, &samples)
	}
	rng := uint64(4321)
	if s := os.Getenv("FAST_JSON_SEED"); s != "" {
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
		randomJSON(&b, next, 0)
		src := []byte(b.String())
		if next(10) == 0 && len(src) > 0 { // one byte mutated
			const bytes = "{}[],:\" \n\\x0"
			src[next(len(src))] = bytes[next(len(bytes))]
		}
		if checkJSONAgrees(t, src) {
			accepted++
		}
	}
	t.Logf("fast path accepted %d of %d", accepted, samples)
	if accepted < samples/10 {
		t.Errorf("the fast path accepted only %d of %d random documents", accepted, samples)
	}
}

// FuzzFastJSON checks the JSON fast path against yaml.v3 on arbitrary
// input: the same tree and positions, the same plan or diagnostics.
func FuzzFastJSON(f *testing.F) {
	// Small seeds: the fuzzer mutates each seed about as often, so the
	// whole corpus (TestFastJSONCorpus) would leave these few untouched.
	for _, c := range jsonCases() {
		if len(c.src) < 2048 {
			f.Add([]byte(c.src))
		}
	}
	for _, file := range []string{"../examples/minimal.stratum.yaml", "../examples/five-constructs.stratum.yaml"} {
		src, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		snap := specSnapshot(f, src)
		var indented bytes.Buffer
		if err := json.Indent(&indented, snap, "", "  "); err != nil {
			f.Fatal(err)
		}
		f.Add(snap)
		f.Add(indented.Bytes())
	}
	f.Add([]byte(`{"a":"\u00e9","b":[1,-0.5e3,true,null,{}],"é":"ü"}`))
	f.Add([]byte("{\n  \"a\": [\n    1\n  ]\n}\n"))
	f.Add([]byte(`{"\n\t\"\\":"\u00e9\u4E2D\b\f\r","x":[-1.5e+3,0,1E-7,12345678901234567890]}`))
	f.Add([]byte("{\"é😀中\":[\"ü\",{\"k\":\"\uFFFD\"}],\n \"y\": \"${a.output}\"}"))
	f.Fuzz(func(t *testing.T, src []byte) {
		checkJSONAgrees(t, src)
		// The input also drives randomJSON, so that the fuzzer explores
		// documents made of the fragments that matter (escapes, numbers,
		// whitespace), which byte mutations rarely assemble.
		checkJSONAgrees(t, generatedJSON(src))
	})
}

// generatedJSON is the document randomJSON writes when its choices are
// read from choices (0 once they run out).
func generatedJSON(choices []byte) []byte {
	next := func(n int) int {
		if len(choices) == 0 {
			return 0
		}
		c := int(choices[0])
		choices = choices[1:]
		return c % n
	}
	var b strings.Builder
	randomJSON(&b, next, 0)
	return []byte(b.String())
}
