package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// scanSummary is what a frameScanner found, for comparison.
func scanSummary(s *frameScanner) string {
	return fmt.Sprintf("ids=%d id=%s kind=%q method=%v result=%v depth=%d", s.idCount, s.id, s.idKind, s.hasMethod, s.hasResult, s.maxDepth)
}

// scanPieces feeds p in pieces of n bytes.
func scanPieces(p []byte, n int) *frameScanner {
	s := &frameScanner{}
	for len(p) > 0 {
		k := min(n, len(p))
		s.feed(p[:k])
		p = p[k:]
	}
	return s
}

func TestFrameScanner(t *testing.T) {
	longID := `"` + strings.Repeat("i", maxIDBytes) + `"`
	for _, tc := range []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"x"}`, `ids=1 id=1 kind='1' method=true result=false depth=1`},
		{`{"id":"a\"b","result":{}}`, `ids=1 id="a\"b" kind='"' method=false result=true depth=2`},
		{` { "id" : -12 , "error" : null } `, `ids=1 id=-12 kind='-' method=false result=true depth=1`},
		{`{"\u0069d":7,"m\u0065thod":"x"}`, `ids=1 id=7 kind='7' method=true result=false depth=1`},
		{`{"ID":7,"Method":"x"}`, `ids=0 id= kind='\x00' method=false result=false depth=1`},
		{`{"params":{"id":1,"method":"x"},"x":[{"id":2}]}`, `ids=0 id= kind='\x00' method=false result=false depth=3`},
		{`{"id":1,"id":"two"}`, `ids=2 id="two" kind='"' method=false result=false depth=1`},
		{`{"id":{"a":1}}`, `ids=1 id= kind='{' method=false result=false depth=2`},
		{`{"id":null}`, `ids=1 id=null kind='n' method=false result=false depth=1`},
		{`{"id":` + longID + `}`, `ids=1 id= kind='"' method=false result=false depth=1`},
		{`{"id":12`, `ids=0 id= kind='1' method=false result=false depth=1`},
		{`{"id":"ab`, `ids=0 id= kind='"' method=false result=false depth=1`},
		{`{"method":"x","params":` + strings.Repeat("[", 50000), `ids=0 id= kind='\x00' method=true result=false depth=50001`},
		{`{"a":"]]]}}}","id":3}`, `ids=1 id=3 kind='3' method=false result=false depth=1`},
		{`{"a":"\\","id":4}`, `ids=1 id=4 kind='4' method=false result=false depth=1`},
		{`{"a":"x\"y\\\"z\n","id":"q\"\\"}`, `ids=1 id="q\"\\" kind='"' method=false result=false depth=1`},
		{`{"s":"` + strings.Repeat(`ab\n\"`, 1000) + `","method":"m"}`, `ids=0 id= kind='\x00' method=true result=false depth=1`},
		{`{"id":5} {"id":6}`, `ids=1 id=5 kind='5' method=false result=false depth=1`},
		{`[{"id":1}]`, `ids=0 id= kind='\x00' method=false result=false depth=2`},
		{`42`, `ids=0 id= kind='\x00' method=false result=false depth=0`},
		{"{\"id\":\"\xff\"}", "ids=1 id=\"\xff\" kind='\"' method=false result=false depth=1"},
	} {
		whole := scanSummary(scanFrame([]byte(tc.in)))
		if whole != tc.want {
			t.Errorf("scan %.80q:\n got %s\nwant %s", tc.in, whole, tc.want)
		}
		for _, n := range []int{1, 2, 3, 7} {
			if got := scanSummary(scanPieces([]byte(tc.in), n)); got != whole {
				t.Errorf("scan %.80q in pieces of %d: %s, whole: %s", tc.in, n, got, whole)
			}
		}
	}
}

func TestCheckID(t *testing.T) {
	for _, tc := range []struct {
		raw, echo string
		usable    bool
	}{
		{`1`, `1`, true},
		{`-9007199254740992`, `-9007199254740992`, true},
		{`9007199254740993`, `9007199254740993`, false},
		{`1e2`, `1e2`, true},
		{`1.0`, `1.0`, true},
		{`1.5`, `1.5`, false},
		{`1e400`, `1e400`, false},
		{`01`, ``, false},
		{`"a"`, `"a"`, true},
		{"\"\xff\"", "\"\ufffd\"", true},
		{`"\x"`, ``, false},
		{`null`, ``, false},
		{`true`, ``, false},
		{``, ``, false},
	} {
		echo, usable := checkID(json.RawMessage(tc.raw))
		if string(echo) != tc.echo || usable != tc.usable {
			t.Errorf("checkID(%s) = %s, %v; want %s, %v", tc.raw, echo, usable, tc.echo, tc.usable)
		}
	}
}

// FuzzFrameScanner: fed whole or in pieces the scanner finds the same;
// on a valid JSON object it finds what encoding/json finds (the last id,
// method, result or error).
func FuzzFrameScanner(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{"id":2}}`,
		`{"id":"a\"\\b","result":[1,{"x":"}"}]}`,
		`{"\u0069d" : 3 , "error":{}}`,
		`{"id":1,"id":2}`,
		`{"id":[1],"method":null}`,
	} {
		f.Add([]byte(s), 3)
	}
	f.Fuzz(func(t *testing.T, in []byte, n int) {
		if n < 1 || n > len(in) {
			n = 1
		}
		whole := scanFrame(in)
		if got := scanSummary(scanPieces(in, n)); got != scanSummary(whole) {
			t.Fatalf("in pieces of %d: %s, whole: %s", n, got, scanSummary(whole))
		}
		var members map[string]json.RawMessage
		if bytes.HasPrefix(bytes.TrimLeft(in, " \t\r\n"), []byte("{")) && json.Unmarshal(in, &members) == nil {
			id, hasID := members["id"]
			_, method := members["method"]
			_, result := members["result"]
			_, errMember := members["error"]
			if hasID != (whole.idCount > 0) || method != whole.hasMethod || (result || errMember) != whole.hasResult {
				t.Fatalf("scan %s, encoding/json %v", scanSummary(whole), members)
			}
			if hasID && whole.id != nil && !bytes.Equal(id, whole.id) {
				t.Fatalf("id %s, encoding/json %s", whole.id, id)
			}
		}
	})
}

// BenchmarkFrameScanner: the scan every frame gets, on a step_done-like
// call carrying 1 MB of YAML-ish text (a newline escape every 40 bytes);
// BenchmarkFrameValid is json.Valid on the same frame, for scale.
func BenchmarkFrameScanner(b *testing.B) {
	frame := benchFrame()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		scanFrame(frame)
	}
}

func BenchmarkFrameValid(b *testing.B) {
	frame := benchFrame()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		json.Valid(frame)
	}
}

func benchFrame() []byte {
	text, _ := json.Marshal(strings.Repeat(strings.Repeat("x", 39)+"\n", 1<<20/40))
	return []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"stratum_step_done","arguments":{"runId":"r","stepId":"s","dispatchToken":"t","result":{"output":{"text":` + string(text) + `,"n":[1,2,3]}}}}}`)
}
