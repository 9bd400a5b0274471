package agent

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/stratum-go/stratum/expr"
)

// Bounds on the text a failure reason quotes from an agent: reasons are
// stored in the run and shown to the next attempt, so they stay short.
const (
	maxExcerpt    = 200
	maxReasonTail = 2000
)

// excerpt returns the start of b as printable text, marked when cut.
func excerpt(b []byte) string {
	s := strings.ToValidUTF8(string(bytes.TrimSpace(b)), "\uFFFD")
	if len(s) <= maxExcerpt {
		return fmt.Sprintf("%q", s)
	}
	cut := maxExcerpt
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q...", s[:cut])
}

// tail returns the end of b (at most maxReasonTail bytes, starting at a
// line boundary when one is near) as valid, trimmed UTF-8, with "..." in
// front when it was cut.
func tail(b []byte) string {
	s, cut := endOf(bytes.TrimSpace(b), maxReasonTail)
	if cut {
		return "..." + s
	}
	return s
}

// endOf returns the last limit bytes of b at most, from a line boundary
// when one lies in the first half of them, from a rune boundary in any
// case, as valid UTF-8; cut says whether anything was dropped.
func endOf(b []byte, limit int) (s string, cut bool) {
	if len(b) > limit {
		b, cut = b[len(b)-limit:], true
		if i := bytes.IndexByte(b, '\n'); i >= 0 && i < limit/2 {
			b = b[i+1:]
		}
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), cut
}

// errNotJSON is wrapped by extractAnswer when a model's answer holds no
// JSON value it can take.
var errNotJSON = errors.New("answer is not a JSON value")

// extractAnswer takes the JSON value out of a model's final message. The
// message must be exactly one JSON value, optionally wrapped in a Markdown
// code fence (```json ... ``` or ``` ... ```), or contain exactly one
// fenced block when the model added prose around it. Nothing else is
// guessed at: a value mixed into prose without a fence is refused.
func extractAnswer(text string) (any, error) {
	s := strings.TrimSpace(text)
	if s == "" {
		return nil, fmt.Errorf("%w: the answer is empty", errNotJSON)
	}
	v, err := expr.DecodeJSON([]byte(s))
	if err == nil {
		return v, nil
	}
	blocks := fencedBlocks(s)
	if len(blocks) == 1 {
		v, ferr := expr.DecodeJSON([]byte(blocks[0]))
		if ferr == nil {
			return v, nil
		}
		return nil, fmt.Errorf("%w: the fenced block is invalid JSON (%v); it began %s", errNotJSON, ferr, excerpt([]byte(blocks[0])))
	}
	if len(blocks) > 1 {
		return nil, fmt.Errorf("%w: the answer holds %d fenced blocks, want exactly one JSON value", errNotJSON, len(blocks))
	}
	return nil, fmt.Errorf("%w (%v); it began %s", errNotJSON, err, excerpt([]byte(s)))
}

// fencedBlocks returns the bodies of the ``` fenced blocks in s. A fence
// opens at the start of a line with ``` and an optional info word, and
// closes at a line that is ``` alone. An unclosed fence is not a block.
func fencedBlocks(s string) []string {
	var blocks []string
	lines := strings.Split(s, "\n")
	for i := 0; i < len(lines); i++ {
		open := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(open, "```") {
			continue
		}
		if info := strings.TrimSpace(strings.TrimPrefix(open, "```")); strings.ContainsAny(info, " `") {
			continue
		}
		closed := false
		for j := i + 1; j < len(lines); j++ {
			if strings.TrimSpace(lines[j]) == "```" {
				blocks = append(blocks, strings.Join(lines[i+1:j], "\n"))
				i, closed = j, true
				break
			}
		}
		if !closed {
			// No closing line after this opener means none after any
			// later one either: stop, rather than rescan the rest of the
			// text for every opener (quadratic on a hostile answer).
			break
		}
	}
	return blocks
}
