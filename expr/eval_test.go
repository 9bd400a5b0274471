package expr

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// std is the binding set most cases use (the corpus's own).
const std = `{"result": {"status": "ok", "n": 7, "half": 0.5, "ready": true, "blank": "", "langs": ["go", "rust", "zig"],
 "scores": [4, 15, 8, 16], "bits": [false, true], "odd": [0, "", null, [], {}], "doc": {"title": "T", "meta": {"pages": 12}},
 "nothing": null, "accent": "café", "astral": "𝒳y", "huge": 1e308, "tiny": 5e-324, "minus": -2.75, "e": [], "eo": {},
 "true": 1, "arr": ["a\"b\n\u0001<>&\u2028é😀"], "o": {"b": 1, "2": 2, "a": 3, "1": 4, "01": 5}, "mixed": [1, "a"]},
 "input": {"user": "Grace", "max": 10, "strict": false, "tags": ["a", "b"]}, "item": "unit-3", "prev": {"step": 2, "log": ["x", "y", "z"]}}`

func mustBindings(t testing.TB, js string) Bindings {
	t.Helper()
	if js == "" {
		return Bindings{}
	}
	v, err := DecodeJSON([]byte(js))
	if err != nil {
		t.Fatalf("bindings %.40s: %v", js, err)
	}
	b, err := BindingsFromObject(v.(*Object))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// evalCase expects either a value (as JSON) or an error code.
type evalCase struct {
	expr     string
	bindings string // JSON object; "" for none
	want     string // JSON of the value, when code is ""
	code     Code
}

func runEvalCases(t *testing.T, cases []evalCase) {
	t.Helper()
	for _, c := range cases {
		b := mustBindings(t, c.bindings)
		v, err := Evaluate(context.Background(), c.expr, b, nil)
		if c.code != "" {
			var e *Error
			if !errors.As(err, &e) || e.Code != c.code {
				t.Errorf("%.80q: got %s / %v, want %s", c.expr, mustJSON(v), err, c.code)
			}
			continue
		}
		if err != nil {
			t.Errorf("%.80q: got error %v, want %s", c.expr, err, c.want)
			continue
		}
		want, derr := DecodeJSON([]byte(c.want))
		if derr != nil {
			t.Fatalf("%q: bad want %s: %v", c.expr, c.want, derr)
		}
		if !sameJSON(v, want) {
			t.Errorf("%.80q: got %s, want %s", c.expr, mustJSON(v), c.want)
		}
	}
}

func TestLexical(t *testing.T) {
	runEvalCases(t, []evalCase{
		{expr: "1E3", want: "1000"},
		{expr: "0.5e-3", want: "0.0005"},
		{expr: "0.0", want: "0"},
		{expr: "1e-400", want: "0"},
		{expr: "1e400", code: CodeParse},
		{expr: "1.", code: CodeParse},
		{expr: "1.e", code: CodeType}, // 1 . e: a member of a number
		{expr: "1.5.x", code: CodeType},
		{expr: "1e+", code: CodeParse},
		{expr: "00", code: CodeParse},
		{expr: "0x10", code: CodeParse},
		{expr: "1_000", code: CodeParse},
		{expr: "+1", code: CodeParse},
		{expr: `'it''s'`, code: CodeParse},
		{expr: `'unterminated`, code: CodeParse},
		{expr: `'a\'`, code: CodeParse},
		{expr: `'a\`, code: CodeParse},
		{expr: `"\u00E9"`, want: `"é"`},
		{expr: `'\x41'`, code: CodeParse},
		{expr: `'\u{41}'`, code: CodeParse},
		{expr: `'\uD83D'`, code: CodeParse}, // lone surrogates are refused (docs/expressions.md, "Where this implementation differs")
		{expr: `'\uDE00\uD83D'`, code: CodeParse},
		{expr: `'\uD83D\uDE00' == '😀'`, want: "true"},
		{expr: `"\u00E9" == 'e\u0301'`, want: "false"}, // an escape is one code unit, never normalised
		{expr: `'\\n' == '\n'`, want: "false"},         // an escaped backslash, then n: not a newline
		{expr: `'a\/b' == "a/b"`, want: "true"},
		{expr: `'\b\f\n\r\t\/\\\"\''`, want: `"\b\f\n\r\t/\\\"'"`},
		{expr: "'tab\there'", code: CodeParse},
		{expr: "'cr\rhere'", code: CodeParse},
		{expr: "'\x7f'", want: `"\u007f"`},
		{expr: "'\u2028'", want: `"\u2028"`},
		{expr: "\ufeff1\u00a0+\u30001\u2029", want: "2"},
		{expr: "1\u200b+1", code: CodeParse}, // U+200B is not whitespace
		{expr: "1\u180e+1", code: CodeParse},
		{expr: "é", code: CodeParse},
		{expr: "#", code: CodeParse},
		{expr: "$x", code: CodeParse},
		{expr: "${input.user}", code: CodeParse},
		{expr: "a = 1", code: CodeParse},
		{expr: "true & false", code: CodeParse},
		{expr: "true | false", code: CodeParse},
		{expr: "5 % 2", code: CodeParse},
		{expr: "1 ; 2", code: CodeParse},
		{expr: "~1", code: CodeParse},
		{expr: "2 ^ 3", code: CodeParse},
		{expr: "a\\b", code: CodeParse},
		{expr: "1 !== 2", code: CodeParse},
		{expr: "true and false", code: CodeParse},
		{expr: "not true", code: CodeParse},
		{expr: "", code: CodeParse},
		{expr: "\n\t", code: CodeParse},
		{expr: "\xff", code: CodeParse},
		{expr: "'\xff'", code: CodeParse},
	})
}

func TestSyntax(t *testing.T) {
	runEvalCases(t, []evalCase{
		{expr: "true(1)", code: CodeParse},
		{expr: "result.langs.len()", bindings: std, code: CodeParse},
		{expr: "len (result.langs)", bindings: std, want: "3"},
		{expr: "len\n(result.langs)", bindings: std, want: "3"},
		{expr: "len()", code: CodeType},
		{expr: "len(,)", code: CodeParse},
		{expr: "len(1,,2)", code: CodeParse},
		{expr: "len(1", code: CodeParse},
		{expr: "foo()", code: CodeUnknownFunction},
		{expr: "result.in", bindings: std, code: CodeParse},
		{expr: "result.true", bindings: std, want: "1"},
		{expr: "result.prototype", bindings: std, code: CodeParse},
		{expr: "result.__proto__", bindings: std, code: CodeParse},
		{expr: "result.", bindings: std, code: CodeParse},
		{expr: "result..status", bindings: std, code: CodeParse},
		{expr: "result.'status'", bindings: std, code: CodeParse},
		{expr: "result[0]", bindings: std, code: CodeType},
		{expr: "[1]", code: CodeParse},
		{expr: "result.langs[0.0]", bindings: std, want: `"go"`},
		{expr: "result.langs [ 2 ]", bindings: std, want: `"zig"`},
		{expr: "result.langs[1] == 'zig'", bindings: std, want: "false"},
		{expr: "result . doc . title == 'T'", bindings: std, want: "true"},
		{expr: "result.langs[1.5]", bindings: std, code: CodeParse},
		{expr: "result.langs[1e300]", bindings: std, code: CodeType},
		{expr: "result.langs[00]", bindings: std, code: CodeParse},
		{expr: "result.langs[]", bindings: std, code: CodeParse},
		{expr: "result.langs[0", bindings: std, code: CodeParse},
		{expr: "result.langs[true]", bindings: std, code: CodeParse},
		{expr: "result.doc.meta.pages", bindings: std, want: "12"},
		{expr: "prev.log[0]", bindings: std, want: `"x"`},
		{expr: "(1 + 2", code: CodeParse},
		{expr: "1 + 2)", code: CodeParse},
		{expr: "()", code: CodeParse},
		{expr: "1 +", code: CodeParse},
		{expr: "* 2", code: CodeParse},
		{expr: "1 2", code: CodeParse},
		{expr: "'a' 'b'", code: CodeParse},
		{expr: "in", code: CodeParse},
		{expr: "'a' in", code: CodeParse},
		{expr: "result.langs in", bindings: std, code: CodeParse},
		{expr: "null.x", code: CodeType},
		{expr: "result.my-step", bindings: `{"result": {"my": 5}}`, code: CodeUnknownIdentifier},
	})
}

func TestOperators(t *testing.T) {
	runEvalCases(t, []evalCase{
		{expr: "-0", want: "0"},
		{expr: "str(-0)", want: `"0"`},
		{expr: "1 / -0", code: CodeType},
		{expr: "-'a'", code: CodeType},
		{expr: "-null", code: CodeType},
		{expr: "!1", code: CodeType},
		{expr: "--true", code: CodeType},
		{expr: "- - - 1", want: "-1"},
		{expr: "-2 * 3", want: "-6"},
		{expr: "2 * -3", want: "-6"},
		{expr: "7 - - 3", want: "10"},
		{expr: "10 / 4", want: "2.5"},
		{expr: "1 / 3 * 3", want: "1"},
		{expr: "2 + 3 * 4 - 6 / 2", want: "11"},
		{expr: "(2 + 3) * 4", want: "20"},
		{expr: "0.1 + 0.2 == 0.3", want: "false"},
		{expr: "1e308 * 10", code: CodeType},
		{expr: "-1e308 - 1e308", code: CodeType},
		{expr: "result.tiny * 0.5", bindings: std, want: "0"},
		{expr: "'ab' + 1", code: CodeType},
		{expr: "1 + '1'", code: CodeType},
		{expr: "null + null", code: CodeType},
		{expr: "true + true", code: CodeType},
		{expr: "'a' - 'a'", code: CodeType},
		{expr: "'a' / 0", code: CodeType},
		{expr: "null == null", want: "true"},
		{expr: "null != null", want: "false"},
		{expr: "1 == true", want: "false"},
		{expr: "'e\u0301' == '\u00e9'", want: "false"},
		{expr: "result.e == result.e", bindings: std, want: "true"},
		{expr: "result.eo == result.e", bindings: std, want: "false"},
		{expr: "result.doc == result.doc", bindings: std, want: "true"},
		{expr: "result.a == result.b", bindings: `{"result": {"a": {"x": 1}, "b": {"x": 1, "y": null}}}`, want: "false"},
		{expr: "result.a == result.b", bindings: `{"result": {"a": {"x": 1, "y": null}, "b": {"x": 1}}}`, want: "false"},
		{expr: "result.a == result.b", bindings: `{"result": {"a": [1, [2, {"k": "v"}]], "b": [1, [2, {"k": "v"}]]}}`, want: "true"},
		{expr: "result.a != result.b", bindings: `{"result": {"a": [1], "b": [1, 2]}}`, want: "true"},
		{expr: "'a' < 'b' < 'c'", code: CodeType},
		{expr: "1 < 2 == true", want: "true"},
		{expr: "true < false", code: CodeType},
		{expr: "'10' < '9'", want: "true"},
		{expr: "'' < 'a'", want: "true"},
		{expr: "'a' <= 'a'", want: "true"},
		{expr: "'～' < '😀'", want: "false"},
		{expr: "'\uffff' > '\U00010000'", want: "true"},
		{expr: "'\U00010001' > '\U00010000'", want: "true"},
		{expr: "'ab' > 'a'", want: "true"},
		{expr: "2 >= 2", want: "true"},
		{expr: "-0 < 0", want: "false"},
		{expr: "1 < '2'", code: CodeType},
		{expr: "result.doc < result.doc", bindings: std, code: CodeType},
		{expr: "!true == false", want: "true"},
		{expr: "!'a' in 'abc'", code: CodeType},
		{expr: "false && missing", want: "false"},
		{expr: "true || missing", want: "true"},
		{expr: "missing || true", code: CodeUnknownIdentifier},
		{expr: "true && missing", code: CodeUnknownIdentifier},
		{expr: "true && 1", code: CodeType},
		{expr: "false || 1", code: CodeType},
		{expr: "null && true", code: CodeType},
		{expr: "false || false || true", want: "true"},
		{expr: "true || false && false", want: "true"},
		{expr: "missing + 1", code: CodeUnknownIdentifier},
		{expr: "1 + missing", code: CodeUnknownIdentifier},
		{expr: "(1/0) + missing", code: CodeType},
		{expr: "1 == 1 == true", want: "true"},
		{expr: "1 + 1 == 2 && 2 * 2 == 4 || false", want: "true"},
	})
}

func TestIn(t *testing.T) {
	runEvalCases(t, []evalCase{
		{expr: "'a' in ['a']", code: CodeParse},
		{expr: "null in result.doc", bindings: std, code: CodeType},
		{expr: "'title' in result.doc", bindings: std, want: "true"},
		{expr: "'__proto__' in result.doc", bindings: std, code: CodeValidation},
		{expr: "'prototype' in result.eo", bindings: std, code: CodeValidation},
		{expr: "'constructor' in 'constructor'", want: "true"},
		{expr: "'__proto__' in result.langs", bindings: std, want: "false"},
		{expr: "'toString' in result.doc", bindings: std, want: "false"},
		{expr: "'hasOwnProperty' in result.eo", bindings: std, want: "false"},
		{expr: "1 in 5", code: CodeType},
		{expr: "'a' in null", code: CodeType},
		{expr: "'a' in true", code: CodeType},
		{expr: "1 in result.doc", bindings: std, code: CodeType},
		{expr: "'a' in 'abc' in 'true'", code: CodeType},
		{expr: "result.e in result.odd", bindings: std, want: "true"},
		{expr: "result.eo in result.odd", bindings: std, want: "true"},
		{expr: "false in result.odd", bindings: std, want: "false"},
		{expr: "0 in result.odd", bindings: std, want: "true"},
		{expr: "-0 in result.odd", bindings: std, want: "true"},
		{expr: "'' in ''", want: "true"},
		{expr: "'ab' in 'a'", want: "false"},
		{expr: "'é' in result.accent", bindings: std, want: "true"},
		{expr: "'1' in result.o", bindings: std, want: "true"},
		{expr: "'01' in result.o", bindings: std, want: "true"},
		{expr: "'3' in result.o", bindings: std, want: "false"},
	})
}

func TestBuiltins(t *testing.T) {
	runEvalCases(t, []evalCase{
		{expr: "any(result.odd)", bindings: std, want: "false"},
		{expr: "all(result.bits)", bindings: std, want: "false"},
		{expr: "all(result.e)", bindings: std, want: "true"},
		{expr: "any(5)", code: CodeType},
		{expr: "any(null)", code: CodeType},
		{expr: "any(result.doc)", bindings: std, code: CodeType},
		{expr: "any()", code: CodeType},
		{expr: "len(result.langs)", bindings: std, want: "3"},
		{expr: "len(null)", code: CodeType},
		{expr: "len(result.eo)", bindings: std, want: "0"},
		{expr: "len('😀')", want: "2"},
		{expr: "len('e\u0301')", want: "2"},
		{expr: "len(result.o)", bindings: std, want: "5"},
		{expr: "max(result.scores)", bindings: std, want: "16"},
		{expr: "min(input.tags)", bindings: std, want: `"a"`},
		{expr: "max(result.langs)", bindings: std, want: `"zig"`},
		{expr: "max(result.e)", bindings: std, code: CodeType},
		{expr: "max('abc')", code: CodeType},
		{expr: "max(result.mixed)", bindings: std, code: CodeType},
		{expr: "min(result.odd)", bindings: std, code: CodeType},
		{expr: "max(result.v)", bindings: `{"result": {"v": ["～", "😀"]}}`, want: `"～"`},
		{expr: "min(result.v)", bindings: `{"result": {"v": ["～", "😀"]}}`, want: `"😀"`},
		{expr: "max(result.v)", bindings: `{"result": {"v": [-1e308, -5]}}`, want: "-5"},
		{expr: "min(result.v)", bindings: `{"result": {"v": [3]}}`, want: "3"},
		{expr: "max(result.v)", bindings: `{"result": {"v": [[1], [2]]}}`, code: CodeType},
		{expr: "max(result.v)", bindings: `{"result": {"v": [null]}}`, code: CodeType},
		{expr: "min()", code: CodeType},
		{expr: "str(1e-7)", want: `"1e-7"`},
		{expr: "str(123e-20)", want: `"1.23e-18"`},
		{expr: "str(0.000001)", want: `"0.000001"`},
		{expr: "str(0.0000012345)", want: `"0.0000012345"`},
		{expr: "str(1e21)", want: `"1e+21"`},
		{expr: "str(999999999999999900000)", want: `"999999999999999900000"`},
		{expr: "str(1.5e300)", want: `"1.5e+300"`},
		{expr: "str(5e-324)", want: `"5e-324"`},
		{expr: "str(result.huge)", bindings: std, want: `"1e+308"`},
		{expr: "str(-1.5)", want: `"-1.5"`},
		{expr: "str(100)", want: `"100"`},
		{expr: "str(123.456)", want: `"123.456"`},
		{expr: "str(9007199254740993)", want: `"9007199254740992"`},
		{expr: "str(result.langs)", bindings: std, want: `"[\"go\",\"rust\",\"zig\"]"`},
		{expr: "str(null)", want: `"null"`},
		{expr: "str(false)", want: `"false"`},
		{expr: "str(result.eo)", bindings: std, want: `"{}"`},
		{expr: "str(result.e)", bindings: std, want: `"[]"`},
		{expr: "str(result.odd)", bindings: std, want: `"[0,\"\",null,[],{}]"`},
		{expr: "str(result.o)", bindings: std, want: `"{\"1\":4,\"2\":2,\"b\":1,\"a\":3,\"01\":5}"`},
		{expr: "str('a\"b')", want: `"a\"b"`},
		{expr: "str(result.arr)", bindings: std, want: `"[\"a\\\"b\\n\\u0001<>&\u2028é😀\"]"`},
		{expr: "str()", code: CodeType},
		{expr: "str(1, 2)", code: CodeType},
		{expr: "str(1) + str(2)", want: `"12"`},
		{expr: "str(1) + str(2) == '21'", want: "false"},
		{expr: "max(result.scores) == 15", bindings: std, want: "false"},
		{expr: "int('007') == 7", want: "true"},
		{expr: "int('-17')", want: "-17"},
		{expr: "int('007')", want: "7"},
		{expr: "int(' 5')", code: CodeType},
		{expr: "int('5 ')", code: CodeType},
		{expr: "int('3.0')", code: CodeType},
		{expr: "int('0x10')", code: CodeType},
		{expr: "int('+')", code: CodeType},
		{expr: "int('-')", code: CodeType},
		{expr: "int('１')", code: CodeType},
		{expr: "int(true)", want: "1"},
		{expr: "int(result.doc)", bindings: std, code: CodeType},
		{expr: "int(result.langs)", bindings: std, code: CodeType},
		{expr: "int(1e300)", want: "1e300"},
		{expr: "int(-0.5)", want: "0"},
		{expr: "int(2.999)", want: "2"},
		{expr: "int('99999999999999999999')", want: "100000000000000000000"},
		{expr: "int('1" + strings.Repeat("0", 400) + "')", code: CodeType},
		{expr: "int('-0') == 0", want: "true"},
		{expr: "bool(null)", want: "false"},
		{expr: "bool('')", want: "false"},
		{expr: "bool(' ')", want: "true"},
		{expr: "bool(result.eo)", bindings: std, want: "false"},
		{expr: "bool(0)", want: "false"},
		{expr: "bool(-0)", want: "false"},
		{expr: "bool(result.e)", bindings: std, want: "false"},
		{expr: "bool(result.odd)", bindings: std, want: "true"},
		{expr: "bool(false)", want: "false"},
		{expr: "bool()", code: CodeType},
		{expr: "result(1)", bindings: std, code: CodeUnknownFunction},
		{expr: "len", code: CodeUnknownIdentifier},
		{expr: "constructor(1)", code: CodeUnknownFunction},
		{expr: "toString()", code: CodeUnknownFunction},
		{expr: "Len('a')", code: CodeUnknownFunction},
		{expr: "foo(1/0)", code: CodeType},
		{expr: "foo(1, missing)", code: CodeUnknownIdentifier},
		{expr: "len(missing)", code: CodeUnknownIdentifier},
		{expr: "len(1, missing)", code: CodeUnknownIdentifier},
		{expr: "len(1, 2)", code: CodeType},
	})
}

func TestMatches(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	runEvalCases(t, []evalCase{
		{expr: "matches('abc', 'b')", want: "true"},
		{expr: "matches('abc', 'b') == matches('abc', 'x')", want: "false"},
		{expr: "matches('ABC', '^A')", want: "true"},
		{expr: "matches('a', 'a*a*')", code: CodeValidation},
		{expr: `matches('aa', '(a)\\1')`, code: CodeValidation},
		{expr: "matches('a', 'a{2')", code: CodeValidation},
		{expr: "matches('a', '(?i)a')", code: CodeValidation},
		{expr: "matches('a', '(?=a)')", code: CodeValidation},
		{expr: "matches('a', '(?<n>a)')", code: CodeValidation},
		{expr: `matches('A', '\\u{41}')`, want: "true"}, // \u then {41}: the filter sees a quantifier
		{expr: `matches('x', '\\u{1F600}')`, code: CodeValidation},
		{expr: "matches('x', ']')", code: CodeValidation},
		{expr: "matches('x', '}')", code: CodeValidation},
		{expr: "matches('x', 'a{3,2}')", code: CodeValidation},
		{expr: `matches('a', '\\a')`, code: CodeValidation},
		{expr: `matches('-', '\\-')`, code: CodeValidation},
		{expr: `matches('-', '[\\-]')`, want: "true"},
		{expr: "matches('x', '^*')", code: CodeValidation},
		{expr: `matches('é', '^\\w$')`, want: "false"},
		{expr: `matches('\u00a0', '^\\s$')`, want: "true"},
		{expr: `matches('\u0085', '^\\s$')`, want: "false"},
		{expr: "matches('x\ny', '^y')", code: CodeParse}, // a raw newline in a string literal
		{expr: `matches('x\ny', '^y')`, want: "false"},
		{expr: `matches('x\ny', 'x$')`, want: "false"},
		{expr: `matches('x\u2028', '^x.$')`, want: "false"},
		{expr: "matches('😀', '^..$')", want: "false"},
		{expr: "matches('', '')", want: "true"},
		{expr: "matches('abc', '[]')", want: "false"},
		{expr: "matches('abc', '[^]')", want: "true"},
		{expr: `matches('a.b', 'a\\.b')`, want: "true"},
		{expr: `matches('ab', '[\\p{Lu}]')`, want: "false"},
		{expr: `matches('aB', '[\\p{Lu}]')`, want: "true"},
		{expr: "matches('555-1234', '^\\d{3}-\\d{4}$')", code: CodeParse}, // \d is not a string escape
		{expr: `matches('555-1234', '^\\d{3}-\\d{4}$')`, want: "true"},
		{expr: `matches(result.status, input.user)`, bindings: std, want: "false"},
		{expr: `matches(input.user, 'G.*e')`, bindings: std, want: "true"},
		{expr: `matches(input.user, result.status + '|ace')`, bindings: std, want: "true"},
		{expr: `matches(input.user, result.status + '*' + '*')`, bindings: std, code: CodeValidation},
		{expr: "matches(1, 2)", code: CodeType},
		{expr: "matches('a', 1)", code: CodeType},
		{expr: "matches(1, 'a{')", code: CodeType},
		{expr: "matches('a')", code: CodeType},
		{expr: "matches('a', 'b', 'c')", code: CodeType},
		{expr: "matches('a', '" + long(257) + "')", code: CodeResourceLimit},
		{expr: "matches('a', '" + long(256) + "')", want: "false"},
		{expr: "matches('a', '" + long(200) + "**')", code: CodeValidation},
		{expr: "matches('a', '" + long(257) + "**')", code: CodeResourceLimit},
		{expr: "matches('" + long(4097) + "', '**')", code: CodeResourceLimit},
		{expr: "matches('" + long(4096) + "', '^a{4096}$')", want: "true"},
		{expr: "matches('" + strings.Repeat("😀", 2049) + "', 'x')", code: CodeResourceLimit},
		{expr: "matches('" + strings.Repeat("😀", 2048) + "', '^.{2048}$')", want: "true"},
		{expr: "matches('a', '" + strings.Repeat("😀", 129) + "')", code: CodeResourceLimit},
		// Too long by its byte length alone (refused without being scanned),
		// and just within it.
		{expr: "matches(result, 'x')", bindings: `{"result": "` + long(20000) + `"}`, code: CodeResourceLimit},
		{expr: "matches('a', result)", bindings: `{"result": "` + long(1000) + `"}`, code: CodeResourceLimit},
		{expr: "matches(result, '^.{4096}$')", bindings: `{"result": "` + strings.Repeat("€", 4096) + `"}`, want: "true"},
		{expr: "matches('x', result)", bindings: `{"result": "` + strings.Repeat("€", 256) + `"}`, want: "false"},
	})
}

func TestBindingsAndLimits(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + "1" + strings.Repeat("]", n) }
	parens := func(n int, inner string) string { return strings.Repeat("(", n) + inner + strings.Repeat(")", n) }
	calls := func(n int) string { return strings.Repeat("str(", n) + "1" + strings.Repeat(")", n) }
	sum := func(n int) string { return strings.TrimSuffix(strings.Repeat("1+", n), "+") }
	runEvalCases(t, []evalCase{
		{expr: "item", bindings: std, want: `"unit-3"`},
		{expr: "result", bindings: `{"result": null}`, want: "null"},
		{expr: "result.x", bindings: `{"result": null}`, code: CodeType},
		{expr: "input", bindings: `{"result": 1}`, code: CodeUnknownIdentifier},
		{expr: "steps", bindings: std, code: CodeUnknownIdentifier},
		{expr: "Result", bindings: std, code: CodeUnknownIdentifier},
		{expr: "len(result)", bindings: `{"result": ` + deep(128) + `}`, want: "1"},
		{expr: "len(result)", bindings: `{"result": ` + deep(129) + `}`, code: CodeResourceLimit},
		{expr: "len(result)", bindings: `{"result": ` + strings.Repeat("[", 129) + strings.Repeat("]", 129) + `}`, want: "1"},
		{expr: "input", bindings: `{"result": ` + deep(200) + `, "input": 1}`, want: "1"},
		{expr: "result == result", bindings: `{"result": ` + deep(128) + `}`, want: "true"},
		{expr: "result == input", bindings: `{"result": ` + deep(128) + `, "input": ` + strings.Replace(deep(128), "1", "2", 1) + `}`, want: "false"},
		{expr: parens(128, "1"), want: "1"},
		{expr: parens(129, "1"), code: CodeResourceLimit},
		{expr: strings.Repeat("(", 129) + "$", code: CodeParse}, // the lexer looks one token ahead
		{expr: strings.Repeat("!", 128) + "true", want: "true"},
		{expr: strings.Repeat("!", 129) + "true", code: CodeResourceLimit},
		{expr: strings.Repeat("-", 129) + "1", code: CodeResourceLimit},
		{expr: calls(128), want: `"1"`},
		{expr: calls(129), code: CodeResourceLimit},
		{expr: parens(64, strings.Repeat("-", 64)+"1"), want: "1"},
		{expr: parens(64, strings.Repeat("-", 65)+"1"), code: CodeResourceLimit},
		{expr: sum(2048), want: "2048"},
		{expr: sum(2049), code: CodeResourceLimit},
		{expr: sum(2049) + " $", code: CodeParse},
		{expr: parens(1, sum(2048)), want: "2048"},
		{expr: sum(5000), code: CodeResourceLimit},
		{expr: strings.Repeat("(", 100000), code: CodeResourceLimit},
		{expr: strings.Repeat("!", 1000000) + "true", code: CodeResourceLimit},
	})
}

func TestBindingKinds(t *testing.T) {
	p, err := Compile("prev")
	if err != nil {
		t.Fatal(err)
	}
	check := func(b Bindings, want Code) {
		t.Helper()
		_, err := p.Eval(b, nil)
		var e *Error
		if !errors.As(err, &e) || e.Code != want {
			t.Errorf("prev with %+v: %v, want %s", b.Prev, err, want)
		}
	}
	check(Bindings{}, CodeUnknownIdentifier)
	check(Bindings{Prev: BindAbsent()}, CodeType)
	check(Bindings{Prev: Bind(map[string]any{"a": 1})}, CodeType)
	check(Bindings{Prev: Bind(1)}, CodeType) // int is not the model's number
	check(Bindings{Prev: Bind([]any{1.0, []any{2.0, "x"}, func() {}})}, CodeType)

	cyclic := NewObject(1)
	cyclic.Set("self", cyclic)
	check(Bindings{Prev: Bind(cyclic)}, CodeType)
	loop := []any{nil}
	loop[0] = loop
	check(Bindings{Prev: Bind(loop)}, CodeType)

	v, err := p.Eval(Bindings{Prev: Bind(nil)}, nil)
	if err != nil || v != nil {
		t.Errorf("prev bound to null: %v, %v", v, err)
	}
	if !(Bindings{Prev: Bind(nil)}).Prev.Bound() || (Bindings{}).Prev.Bound() || !BindAbsent().Bound() {
		t.Error("Bound() is wrong")
	}
	if _, ok := BindAbsent().Value(); ok {
		t.Error("BindAbsent has a value")
	}
}

func TestPredicate(t *testing.T) {
	b := mustBindings(t, std)
	tests := []struct {
		expr string
		want bool
		err  string
	}{
		{"result.n > 3", true, ""},
		{"result.n > 30", false, ""},
		{"result.n", false, "type_error: predicate must evaluate to boolean, received number"},
		{"result.langs", false, "type_error: predicate must evaluate to boolean, received array"},
		{"result.nothing", false, "type_error: predicate must evaluate to boolean, received null"},
		{"result.doc", false, "type_error: predicate must evaluate to boolean, received object"},
		{"'x'", false, "type_error: predicate must evaluate to boolean, received string"},
		{"missing", false, "unknown_identifier: "},
	}
	for _, tt := range tests {
		p, err := Compile(tt.expr)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.EvalPredicate(context.Background(), b, nil)
		if tt.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
				t.Errorf("%q: %v, want error %q", tt.expr, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q = %v, %v; want %v", tt.expr, got, err, tt.want)
		}
	}
}

func TestParseErrorPosition(t *testing.T) {
	tests := []struct {
		src    string
		offset int
	}{
		{"1 +", 3},
		{"1 $", 2},
		{"'😀' $", 5}, // UTF-16 units: the emoji is two
		{"'é'  #", 5},
		{"result.constructor", 7},
	}
	for _, tt := range tests {
		_, err := Compile(tt.src)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeParse {
			t.Fatalf("%q: %v", tt.src, err)
		}
		if e.Offset != tt.offset || !strings.Contains(e.Message, "position") {
			t.Errorf("%q: offset %d (%s), want %d", tt.src, e.Offset, e.Message, tt.offset)
		}
	}
}

func TestUsesFileFunctions(t *testing.T) {
	for src, want := range map[string]bool{
		"file_exists('a')":                            true,
		"true || file_contains('a', 'b')":             true,
		"len(str(file_exists('x')))":                  true,
		"result.file_exists":                          false,
		"file_exists":                                 false,
		"matches('file_exists', 'x') && len('a') > 0": false,
	} {
		p, err := Compile(src)
		if err != nil {
			t.Fatal(err)
		}
		if p.UsesFileFunctions() != want {
			t.Errorf("UsesFileFunctions(%q) = %v", src, !want)
		}
		if p.Source() != src {
			t.Errorf("Source() = %q", p.Source())
		}
	}
}

func TestCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p, err := Compile(strings.TrimSuffix(strings.Repeat("1+", 1000), "+"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.EvalContext(ctx, Bindings{}, nil)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeResourceLimit || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled evaluation: %v", err)
	}
}

func TestConcatBudget(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	b := Bindings{Result: Bind(big)}
	src := strings.TrimSuffix(strings.Repeat("result+", 100), "+")
	_, err := Evaluate(context.Background(), src, b, nil)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeResourceLimit {
		t.Errorf("concatenating 100 MiB: %v, want resource_limit", err)
	}
	v, err := Evaluate(context.Background(), "len(result + result)", b, nil)
	if err != nil || v != float64(2<<20) {
		t.Errorf("len(result + result) = %v, %v", v, err)
	}

	// str() of a large array or object counts too: 100 nested comparisons
	// of str(result) would hold 100 copies at once.
	arr := Bindings{Result: Bind([]any{big})}
	nested := strings.Repeat("str(result) == (", 100) + "true" + strings.Repeat(")", 100)
	if _, err := Evaluate(context.Background(), nested, arr, nil); !errors.As(err, &e) || e.Code != CodeResourceLimit || !strings.Contains(e.Message, "str()") {
		t.Errorf("100 nested str() of 1 MiB: %v, want resource_limit", err)
	}
	if v, err := Evaluate(context.Background(), "len(str(result)) + len(str(result))", arr, nil); err != nil || v != float64(2*(1<<20+4)) {
		t.Errorf("two str() of 1 MiB = %v, %v", v, err)
	}
	// A string argument is returned as it is: nothing is built.
	if _, err := Evaluate(context.Background(), strings.TrimSuffix(strings.Repeat("len(str(result[0])) + ", 100), " + "), arr, nil); err != nil {
		t.Errorf("str() of a string: %v", err)
	}
}

// A binding far deeper than an expression may read still decodes, and is
// refused only when used.
func TestVeryDeepBinding(t *testing.T) {
	deep := strings.Repeat("[", 5000) + strings.Repeat("]", 5000)
	runEvalCases(t, []evalCase{
		{expr: "true || result", bindings: `{"result": ` + deep + `}`, want: "true"},
		{expr: "result", bindings: `{"result": ` + deep + `}`, code: CodeResourceLimit},
	})
}

// The regex work of one evaluation is bounded: a single large match is
// fine, the same match repeated hundreds of times (minutes of CPU for
// Go's linear-time matcher) is a resource_limit.
func TestMatchWorkBudget(t *testing.T) {
	b := Bindings{Result: Bind(strings.Repeat("ab", 2048))}
	const call = `matches(result, '[^c]{1,4095}c')`
	if v, err := Evaluate(context.Background(), call, b, nil); err != nil || v != false {
		t.Fatalf("one large match: %v, %v", v, err)
	}
	// Repeated, it would take minutes; the budget stops it after a few.
	// (Cancelling the context also stops it between two calls.)
	many := strings.TrimSuffix(strings.Repeat(call+" || ", 500), " || ")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Evaluate(ctx, many, b, nil)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeResourceLimit || !errors.Is(err, context.Canceled) {
		t.Errorf("500 large matches, cancelled: %v, want a cancelled resource_limit", err)
	}
	// Many large literal patterns over a short text: compiling the
	// expression compiles none of them, and the evaluation stops after a
	// few hundred rather than compiling a thousand (seconds, and half a
	// gigabyte kept by the program).
	large := strings.TrimSuffix(strings.Repeat(`matches(item, '[\\p{L}\\p{N}]{1,4095}c') || `, 1000), " || ")
	p, err := Compile(large)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Eval(Bindings{Item: Bind("x")}, nil)
	if !errors.As(err, &e) || e.Code != CodeResourceLimit || !strings.Contains(e.Message, "regex work budget") {
		t.Errorf("1000 large patterns: %v, want the regex work budget resource_limit", err)
	}
	// Small patterns over short texts never come near it.
	small := strings.TrimSuffix(strings.Repeat(`matches(item, '^unit-\\d+$') && `, 800), " && ")
	if v, err := Evaluate(context.Background(), small, Bindings{Item: Bind("unit-3")}, nil); err != nil || v != true {
		t.Errorf("800 small matches: %v, %v", v, err)
	}
}

// Rules of docs/expressions.md that the tables above do not pin down.
func TestSpecRules(t *testing.T) {
	runEvalCases(t, []evalCase{
		// Operators, ==: object equality ignores key order; nested arrays are
		// compared element by element; -0 equals 0 inside containers.
		{expr: "result.a == result.b", bindings: `{"result": {"a": {"x": 1, "y": [2, {"z": null}]}, "b": {"y": [2, {"z": null}], "x": 1}}}`, want: "true"},
		{expr: "result.a == result.b", bindings: `{"result": {"a": [0], "b": [-0]}}`, want: "true"},
		{expr: "result.a == result.b", bindings: `{"result": {"a": [1, 2], "b": [2, 1]}}`, want: "false"},
		{expr: "result.a != result.b", bindings: `{"result": {"a": {"x": 1}, "b": [1]}}`, want: "true"},
		// Operators, evaluation order: a missing member is a type_error, not null, and the guard
		// idiom of docs/expressions.md avoids it.
		{expr: "result.nope", bindings: `{"result": {"label": "x"}}`, code: CodeType},
		{expr: "result.nope == null", bindings: `{"result": {"label": "x"}}`, code: CodeType},
		{expr: "'nope' in result && len(result.nope) > 0", bindings: `{"result": {"label": "x"}}`, want: "false"},
		{expr: "result.doc.meta.nope", bindings: std, code: CodeType},
		// Operators, evaluation order: unknown names are evaluation errors, raised only if reached.
		{expr: "false && upper(missing)", want: "false"},
		{expr: "true || foo()", want: "true"},
		{expr: "foo(missing)", code: CodeUnknownIdentifier},
		{expr: "foo(1, 2, 3)", code: CodeUnknownFunction},
		// Operators, evaluation order: operands left to right: the left error wins.
		{expr: "missing + foo()", code: CodeUnknownIdentifier},
		{expr: "foo() + missing", code: CodeUnknownFunction},
		{expr: "(1 / 0) < missing", code: CodeType},
		// Operators, precedence: postfix binds tighter than unary; unary tighter than binary.
		{expr: "-result.a[1]", bindings: `{"result": {"a": [1, 2]}}`, want: "-2"},
		{expr: "!result.ok == false", bindings: `{"result": {"ok": true}}`, want: "true"},
		{expr: "- 2 * 3", want: "-6"},
		{expr: "len(result.a)[0]", bindings: `{"result": {"a": [1]}}`, code: CodeType},
		// Operators, in: membership in an object is about own keys only, top level.
		{expr: "'x' in result", bindings: `{"result": {"o": {"x": 1}}}`, want: "false"},
		{expr: "'valueOf' in result", bindings: `{"result": {}}`, want: "false"},
		{expr: "'' in result", bindings: `{"result": {"": 1}}`, want: "true"},
		{expr: "result in result", bindings: `{"result": {}}`, code: CodeType},
		{expr: "result in 'abc'", bindings: `{"result": ["a"]}`, code: CodeType},
		// Builtin functions: arity is checked before argument types, for every builtin.
		{expr: "int()", code: CodeType},
		{expr: "bool(1, 2)", code: CodeType},
		{expr: "all(1, 2)", code: CodeType},
		{expr: "max([], [])", code: CodeParse}, // no array literals
		{expr: "min(result, result)", bindings: `{"result": [1]}`, code: CodeType},
		{expr: "file_contains('a', 'b', 'c')", code: CodeType},
		// Builtin functions: max/min of one element; strings by code units.
		{expr: "max(result)", bindings: `{"result": ["b", "B", "a"]}`, want: `"b"`},
		{expr: "min(result)", bindings: `{"result": ["b", "B", "a"]}`, want: `"B"`},
		{expr: "min(result)", bindings: `{"result": [[]]}`, code: CodeType},
		// Builtin functions, str: str of an empty string, a string with quotes (unchanged).
		{expr: "str('')", want: `""`},
		{expr: "len(str('a\"b'))", want: "3"},
		{expr: "str(result)", bindings: `{"result": {"k": [true, null, 1.5, "x"]}}`, want: `"{\"k\":[true,null,1.5,\"x\"]}"`},
	})
}
