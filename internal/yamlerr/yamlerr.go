package yamlerr

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Problem is a YAML syntax error placed in the source.
type Problem struct {
	// Line and Column are 1-based. Column is 0 when only the line is known.
	Line, Column int
	// Message is what is wrong, in yaml.v3's words ("did not find expected
	// ',' or '}'"), without the "yaml: line N:" prefix.
	Message string
	// Hint says what would be right; it is "" when nothing specific is known.
	Hint string
}

// Text is the message followed by the hint, if any.
func (p Problem) Text() string {
	if p.Hint == "" {
		return p.Message
	}
	return p.Message + ": " + p.Hint
}

// Locate places err, the error yaml.v3 returned while parsing src.
func Locate(src []byte, err error) Problem {
	line, msg := splitMessage(err.Error())
	p := Problem{Line: line, Message: msg}
	if parserProblems[msg] && line > 0 {
		// The parser's line is zero-based (the scanner's is not): it names
		// the line before the one it means.
		p.Line++
	}
	l := lines{src: src}
	// At the end of the text yaml.v3 may name the line after the last.
	p.Line = max(1, min(p.Line, l.count()))
	switch msg {
	case "did not find expected ',' or '}'", "did not find expected ',' or ']'", "did not find expected node content":
		l.flowProblem(&p)
	case "did not find expected key", "did not find expected '-' indicator":
		l.blockProblem(&p)
	case "mapping values are not allowed in this context":
		l.colonProblem(&p)
	case "found character that cannot start any token":
		l.characterProblem(&p)
	case "found a tab character that violates indentation", "found a tab character where an indentation space is expected":
		p.Hint = "indent with spaces; YAML does not allow tabs in indentation"
	case "found unexpected end of stream":
		p.Hint = "a quoted string or a flow collection is not closed: add the closing quote, ] or }"
	case "could not find expected ':'":
		p.Hint = "a key must be followed by \": \" on the same line; quote a value that spans lines, or use a block scalar (|)"
	}
	return p
}

// splitMessage splits "yaml: line N: problem" into N (0 when absent) and
// the problem.
func splitMessage(s string) (int, string) {
	s = strings.TrimPrefix(s, "yaml: ")
	if rest, ok := strings.CutPrefix(s, "line "); ok {
		if i := strings.IndexByte(rest, ':'); i > 0 {
			if n, err := strconv.Atoi(rest[:i]); err == nil {
				return n, strings.TrimSpace(rest[i+1:])
			}
		}
	}
	return 0, s
}

// parserProblems are the problems yaml.v3's parser (not its scanner)
// reports; their line numbers are zero-based.
var parserProblems = map[string]bool{
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"did not find expected '-' indicator":    true,
	"did not find expected <document start>": true,
	"did not find expected <stream-start>":   true,
	"did not find expected key":              true,
	"did not find expected node content":     true,
	"found duplicate %TAG directive":         true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

// lines gives line-and-column access to the source.
type lines struct {
	src   []byte
	start []int // byte offset of each line
}

func (l *lines) index() {
	if l.start != nil {
		return
	}
	l.start = append(l.start, 0)
	for i, c := range l.src {
		if c == '\n' {
			l.start = append(l.start, i+1)
		}
	}
}

// count is the number of lines.
func (l *lines) count() int {
	l.index()
	return len(l.start)
}

// text returns line n (1-based) without its line break, or nil.
func (l *lines) text(n int) []byte {
	l.index()
	if n < 1 || n > len(l.start) {
		return nil
	}
	end := len(l.src)
	if n < len(l.start) {
		end = l.start[n] - 1
	}
	s := l.src[l.start[n-1]:end]
	return []byte(strings.TrimSuffix(string(s), "\r"))
}

// offset returns the byte offset where line n (1-based) starts.
func (l *lines) offset(n int) int {
	l.index()
	return l.start[n-1]
}

// position turns a byte offset into a 1-based line and column (columns
// count characters, as the loaded tree's positions do).
func (l *lines) position(off int) (int, int) {
	l.index()
	lo, hi := 0, len(l.start)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if l.start[mid] <= off {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo + 1, utf8.RuneCount(l.src[l.start[lo]:off]) + 1
}

// contentColumn returns the column of the first non-space character of
// line n, or 0.
func (l *lines) contentColumn(n int) int {
	t := l.text(n)
	for i, c := range t {
		if c != ' ' {
			return utf8.RuneCount(t[:i]) + 1
		}
	}
	return 0
}

// colonProblem places "mapping values are not allowed": a ": " where no
// key can start, as in "do: Fix: the bug" or a key indented under a plain
// value. The offending colon is the second ": " of the line, or its only
// one.
func (l *lines) colonProblem(p *Problem) {
	t := l.text(p.Line)
	var colons []int
	quote := byte(0)
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#' && (i == 0 || t[i-1] == ' '):
			i = len(t)
		case c == ':' && (i+1 == len(t) || t[i+1] == ' '):
			colons = append(colons, i)
		}
	}
	switch len(colons) {
	case 0:
		return
	case 1:
		p.Column = utf8.RuneCount(t[:colons[0]]) + 1
		p.Hint = "this key is indented under a plain value; align it with the keys above (or quote the value above if it continues here)"
	default:
		p.Column = utf8.RuneCount(t[:colons[1]]) + 1
		p.Hint = "a plain value cannot contain \": \"; quote the value (\"...\")"
	}
}

// characterProblem places "found character that cannot start any token":
// a tab in the indentation, or a value starting with @ or `.
func (l *lines) characterProblem(p *Problem) {
	t := l.text(p.Line)
	i := 0
	for i < len(t) && t[i] == ' ' {
		i++
	}
	if i < len(t) && t[i] == '\t' {
		p.Column = i + 1
		p.Hint = "indent with spaces; YAML does not allow tabs in indentation"
		return
	}
	for i := range t {
		if (t[i] == '@' || t[i] == '`') && (i == 0 || t[i-1] == ' ') {
			p.Column = utf8.RuneCount(t[:i]) + 1
			p.Hint = "a plain value cannot start with @ or `; quote it (\"...\")"
			return
		}
	}
}
