package agent

import (
	"errors"
	"fmt"
	"strings"
)

// ErrCommandLine is wrapped by [SplitCommandLine]'s errors.
var ErrCommandLine = errors.New("invalid agent command line")

// SplitCommandLine splits a command line into argv the way a POSIX shell
// splits words, without running a shell and without any expansion:
//
//   - words are separated by unquoted spaces, tabs and newlines;
//   - '...' is literal up to the next single quote;
//   - "..." is literal except that \" and \\ stand for " and \;
//   - outside quotes, a backslash makes the next character literal;
//   - quoted and unquoted parts next to each other form one word
//     (--name="a b" is the single word --name=a b), and ” or "" is an
//     empty word.
//
// Characters a shell would act on — | & ; < > ( ) $ ` and a leading ~ —
// are refused when unquoted, because they would silently mean something
// else here: write sh -c '...' to get a shell. Quoting them makes them
// literal.
func SplitCommandLine(line string) ([]string, error) {
	var (
		args   []string
		word   strings.Builder
		inWord bool
	)
	flush := func() {
		if inWord {
			args = append(args, word.String())
			word.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			flush()
		case c == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("%w: unterminated single quote in %q", ErrCommandLine, line)
			}
			word.WriteString(line[i+1 : i+1+end])
			inWord = true
			i += end + 1
		case c == '"':
			j := i + 1
			for ; j < len(line) && line[j] != '"'; j++ {
				if line[j] == '\\' && j+1 < len(line) && (line[j+1] == '"' || line[j+1] == '\\') {
					j++
				}
				word.WriteByte(line[j])
			}
			if j >= len(line) {
				return nil, fmt.Errorf("%w: unterminated double quote in %q", ErrCommandLine, line)
			}
			inWord = true
			i = j
		case c == '\\':
			if i+1 >= len(line) {
				return nil, fmt.Errorf("%w: trailing backslash in %q", ErrCommandLine, line)
			}
			i++
			word.WriteByte(line[i])
			inWord = true
		case strings.IndexByte("|&;<>()$`", c) >= 0 || (c == '~' && !inWord):
			return nil, fmt.Errorf("%w: unquoted %q in %q: shell syntax is not interpreted; quote it, or run a shell explicitly with sh -c '...'", ErrCommandLine, c, line)
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	flush()
	if len(args) == 0 {
		return nil, fmt.Errorf("%w: the command line is empty", ErrCommandLine)
	}
	return args, nil
}
