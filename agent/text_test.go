package agent

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestExtractAnswer(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"bare object", `{"a": 1}`, `{"a":1}`},
		{"surrounding whitespace", "\n\n  [1, 2]\n", `[1,2]`},
		{"string", `"hello"`, `"hello"`},
		{"json fence", "```json\n{\"a\": true}\n```", `{"a":true}`},
		{"plain fence", "```\n{\"a\": null}\n```\n", `{"a":null}`},
		{"fence with prose", "Here is the result:\n\n```json\n{\"score\": 0.9}\n```\nLet me know!", `{"score":0.9}`},
		{"indented fence", "  ```json\n  {\"a\": 1}\n  ```", `{"a":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := extractAnswer(tt.text)
			if err != nil {
				t.Fatal(err)
			}
			if got := encode(t, v); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestExtractAnswerErrors(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"empty", "  \n", "the answer is empty"},
		{"prose", "The score is 0.9.", `it began "The score is 0.9."`},
		{"value inside prose", `Result: {"a": 1}`, "answer is not a JSON value"},
		{"two fences", "```json\n1\n```\nand\n```json\n2\n```", "2 fenced blocks"},
		{"bad fence", "```json\n{\"a\": }\n```", "the fenced block is invalid JSON"},
		{"unclosed fence", "```json\n{\"a\": 1}", "answer is not a JSON value"},
		{"two values", `{"a":1}{"b":2}`, "unexpected data after the value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := extractAnswer(tt.text)
			if !errors.Is(err, errNotJSON) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestTailAndExcerpt(t *testing.T) {
	if got := tail([]byte("  short\n")); got != "short" {
		t.Errorf("tail = %q", got)
	}
	long := strings.Repeat("line of stderr\n", 1000) + "final error"
	got := tail([]byte(long))
	if !strings.HasPrefix(got, "...line of stderr\n") || !strings.HasSuffix(got, "final error") || len(got) > maxReasonTail+3 {
		t.Errorf("tail of long text: %d bytes, starts %q", len(got), got[:20])
	}
	// A cut inside a multi-byte rune starts at the next rune: the text is
	// 6001 bytes, so the last 2000 begin with the second byte of an é,
	// which is dropped (not replaced by U+FFFD).
	runes := strings.Repeat("é", 3000)
	if got, want := tail([]byte(runes+"x")), "..."+strings.Repeat("é", 999)+"x"; got != want {
		t.Errorf("tail cut inside a rune = %.20q... (%d bytes), want %.20q... (%d bytes)", got, len(got), want, len(want))
	}
	// The audit record's stderr is cut the same way at its own limit.
	if got := auditTail([]byte(strings.Repeat("a", 2*auditStderr) + "\n")); got != strings.Repeat("a", auditStderr) {
		t.Errorf("auditTail kept %d bytes, want %d", len(got), auditStderr)
	}
	if got := excerpt([]byte(runes)); !utf8.ValidString(got) || !strings.HasSuffix(got, `"...`) {
		t.Errorf("excerpt = %.30q", got)
	}
	if got := excerpt([]byte("\xff\xfebad")); !utf8.ValidString(got) {
		t.Errorf("excerpt of invalid UTF-8 = %q", got)
	}
}

func FuzzExtractAnswer(f *testing.F) {
	for _, s := range []string{`{"a":1}`, "```json\n[1]\n```", "text ```\n1\n```", "```", "```json\n", `"x"`, "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		v, err := extractAnswer(text)
		if err != nil {
			if !errors.Is(err, errNotJSON) {
				t.Fatalf("error %v does not wrap errNotJSON", err)
			}
			return
		}
		if _, err := extractAnswer(encode(t, v)); err != nil {
			t.Fatalf("re-extracting the encoded answer: %v", err)
		}
	})
}

func TestFencedBlocks(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"```json\n1\n```", []string{"1"}},
		{"```a\n```b\n2\n```", []string{"```b\n2"}},
		{"```\n1\n```\n```x\n2\n```\n```y\n", []string{"1", "2"}},
		{"```json\n{}", nil},
		{"``` a b\n1\n```", nil},
		{"text\n```\n```", []string{""}},
	}
	for _, tt := range tests {
		if got := fencedBlocks(tt.text); strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
			t.Errorf("fencedBlocks(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
	// Many unclosed openers: linear work (this took tens of seconds when
	// every opener rescanned the rest of the answer).
	if _, err := extractAnswer(strings.Repeat("```a\n", 100000)); !errors.Is(err, errNotJSON) {
		t.Errorf("unclosed openers: %v", err)
	}
}

// BenchmarkFencedBlocksUnclosed is an answer of 200,000 unclosed fence
// openers: every opener used to rescan the rest of the text (quadratic,
// minutes for one megabyte); it must stay linear.
func BenchmarkFencedBlocksUnclosed(b *testing.B) {
	text := strings.Repeat("```a\n", 200000)
	for b.Loop() {
		if got := fencedBlocks(text); got != nil {
			b.Fatalf("%d blocks", len(got))
		}
	}
}
