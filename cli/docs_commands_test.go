package cli

import (
	"bufio"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsCommandsParse reads every stratum command line in the shell
// blocks of README.md and docs/*.md and parses it as stratum would: the
// command exists and every flag it gives is one of its flags, with a
// value where the flag needs one. TestDocsCommandsRun (with
// TestReadmeCommands and TestReadmeTour for README's blocks) then runs
// them all; this says first, and precisely, which command or flag a doc
// names that is gone.
func TestDocsCommandsParse(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	files = append(files, filepath.Join("..", "README.md"))
	seen := 0
	for _, path := range files {
		for _, c := range docCommands(t, path) {
			seen++
			args := shellWords(c.text)
			if len(args) < 2 {
				continue // "stratum" alone
			}
			cmd := lookup(args[1])
			if cmd == nil {
				if args[1] == "help" || args[1] == "version" || strings.HasPrefix(args[1], "-") {
					continue
				}
				t.Errorf("%s:%d: %q: no command %q", path, c.line, c.text, args[1])
				continue
			}
			fs := flag.NewFlagSet(args[1], flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			cmd.SetFlags(fs)
			if _, err := parseInterspersed(fs, args[2:]); err != nil {
				t.Errorf("%s:%d: %q: %v", path, c.line, c.text, err)
			}
		}
	}
	t.Logf("%d stratum commands of the docs parsed", seen)
	if seen < 20 {
		t.Fatalf("only %d stratum commands found in the docs: is the reader broken?", seen)
	}
}

type docCommand struct {
	text string // the stratum command, cut at its comment, pipe or redirection
	line int
	// inline is set for a command quoted in the prose (`stratum ...`),
	// not shown in a code block.
	inline bool
	// launched is set for a command another program's command line
	// starts: claude mcp add stratum -- stratum mcp.
	launched bool
	// script is the shell text that runs the command as the doc shows it:
	// in a shell block, the block's lines since its previous command (a
	// heredoc, a cd, the head of a pipe) and the command's own lines as
	// written (its pipe, redirection and comment included); elsewhere the
	// command line alone.
	script string
}

// docCommands are the stratum command lines of the shell blocks (sh,
// bash, shell, console) of a Markdown file, and of its plain blocks where
// a line is a command rather than a synopsis ("[--flag]"), an output line
// ("stratum serve: ...", "(v0.2)") or text: continuation lines joined, a
// prompt "$ " and "go run ./cmd/stratum" read as stratum, a stratum at
// the end of a shell block's pipe ("echo '{...}' | stratum eval ...") or
// of another program's command line ("claude mcp add stratum -- stratum
// mcp", inline too) read as a command, and what
// follows a comment, pipe, redirection or list operator (outside quotes)
// cut off.
//
// Indented code blocks are read as shell blocks: the docs indent the
// commands of a list's steps (docs/guard.md, "Operator workflow") and of
// a paragraph ending with a colon. A block is indented by 4 spaces more
// than the text it belongs to: the content of the list item it is under
// ("1. " puts it at 3, its code at 7), or the margin outside lists; it
// starts after a blank line (an indented line right after text is that
// text's continuation) and ends at the first line indented less. The
// indented blocks of one list are one session, as a reader follows its
// steps: a command's script holds the list's lines since its previous
// command, across its blocks (a key made in step 1, a payload signed in
// step 4).
func docCommands(t *testing.T, path string) []docCommand {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []docCommand
	lang, inBlock, n, start := "", false, 0, 0
	var pending strings.Builder
	var lines []string // of the shell block since its previous command
	launched := false
	// Indented code: the content indentation of the list item the text is
	// in (0 outside lists), whether the previous line was blank, and the
	// indentation of the indented block being read (0 when none is).
	listIndent, blank, codeIndent := 0, true, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		raw := sc.Text()
		trimmed := strings.TrimSpace(raw)
		indent := len(raw) - len(strings.TrimLeft(raw, " "))
		indented := false
		switch {
		case inBlock || codeIndent == 0 && strings.HasPrefix(trimmed, "```"):
		case trimmed == "":
			blank = true
			continue
		case codeIndent > 0 && indent >= codeIndent, codeIndent == 0 && blank && indent >= listIndent+4:
			if codeIndent == 0 {
				codeIndent = listIndent + 4
			}
			indented = true
		default:
			codeIndent = 0
			if m := listItem.FindString(raw); m != "" {
				listIndent = len(m)
			} else if indent < listIndent && (blank || indent == 0) {
				listIndent = 0
			}
			if listIndent == 0 {
				lines = nil // the end of a list's session
			}
		}
		blank = false
		if strings.HasPrefix(trimmed, "```") && !indented {
			inBlock = !inBlock
			lang = strings.TrimPrefix(trimmed, "```")
			lines = nil
			continue
		}
		shell := indented || lang == "sh" || lang == "bash" || lang == "shell" || lang == "console"
		if !inBlock && !indented {
			// Commands quoted in the text: `stratum gate show RUN STEP`
			// (synopses with [optional] parts, alternatives a|b and
			// elisions are not commands, nor a mention of a flag,
			// `stratum run --sandbox`, or of a message, `stratum gate: ...`).
			for _, m := range inlineCommand.FindAllStringSubmatch(trimmed, -1) {
				words := strings.Fields(m[2])
				mention := strings.HasPrefix(words[len(words)-1], "-") || len(words) > 1 && strings.HasSuffix(words[1], ":")
				if (!mention || m[1] != "") && !strings.ContainsAny(m[2], "[(|…") && !strings.Contains(m[2], "...") {
					text := cutUnquoted(m[2])
					out = append(out, docCommand{text: text, line: n, inline: true, launched: m[1] != "", script: text})
				}
			}
			continue
		}
		if !shell && lang != "" {
			continue
		}
		if pending.Len() == 0 {
			prompt := strings.HasPrefix(trimmed, "$ ")
			trimmed = strings.TrimPrefix(trimmed, "$ ")
			if shell {
				lines = append(lines, trimmed)
			}
			trimmed = strings.Replace(trimmed, "go run ./cmd/stratum ", "stratum ", 1)
			// The tail of a pipe in a shell block: echo '{...}' | stratum eval -
			if i := strings.Index(trimmed, "| stratum "); shell && i > 0 && len(cutUnquoted(trimmed)) == i {
				trimmed = trimmed[i+2:]
			}
			// What another program starts: claude mcp add stratum -- stratum mcp
			launched = false
			if m := launchedCommand.FindStringSubmatchIndex(cutUnquoted(trimmed)); shell && m != nil {
				trimmed, launched = trimmed[m[2]:], true
			}
			if !strings.HasPrefix(trimmed, "stratum ") {
				continue
			}
			if !shell && !prompt {
				head := cutUnquoted(trimmed)
				if strings.ContainsAny(head, "[(") || strings.HasSuffix(strings.Fields(head)[1], ":") {
					continue
				}
			}
			start = n
		}
		if shell && pending.Len() > 0 {
			lines = append(lines, trimmed)
		}
		if strings.HasSuffix(trimmed, "\\") {
			pending.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		pending.WriteString(trimmed)
		text := strings.TrimSpace(cutUnquoted(pending.String()))
		script := pending.String()
		if shell && !launched {
			script = strings.Join(lines, "\n")
		}
		pending.Reset()
		lines = nil
		out = append(out, docCommand{text: text, line: start, launched: launched, script: script})
	}
	return out
}

// cutUnquoted is s up to its first comment, pipe, redirection or list
// operator outside quotes.
func cutUnquoted(s string) string {
	quote := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '$' && i+1 < len(s) && s[i+1] == '(':
			if j := strings.IndexByte(s[i:], ')'); j > 0 {
				i += j
			}
		case c == '|' || c == ';' || c == '<' || c == '>' || c == '&' || c == '#' && i > 0 && s[i-1] == ' ':
			return s[:i]
		}
	}
	return s
}

// listItem is the marker of a list item and the spaces after it: its
// length is the indentation of the item's content.
var listItem = regexp.MustCompile(`^ *([-*+]|[0-9]+[.)]) +`)

var inlineCommand = regexp.MustCompile("`([a-z]+ [^`]*?-- )?(stratum [^`]+)`")

// launchedCommand is a stratum command at the end of another program's
// command line, after its "--".
var launchedCommand = regexp.MustCompile(`^[a-z][^|;&<>]* -- (stratum .*)$`)

var substitution = regexp.MustCompile(`\$\([^)]*\)|\$\{[^}]*\}|\$[A-Za-z_][A-Za-z_0-9]*`)

// shellWords splits a command line the way sh would for these simple
// lines: quotes group, substitutions become one placeholder word.
func shellWords(s string) []string {
	s = substitution.ReplaceAllString(s, "X")
	var words []string
	var cur strings.Builder
	quote := byte(0)
	has := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			quote, has = c, true
		case c == ' ' || c == '\t':
			if has || cur.Len() > 0 {
				words = append(words, cur.String())
				cur.Reset()
				has = false
			}
		default:
			cur.WriteByte(c)
		}
	}
	if has || cur.Len() > 0 {
		words = append(words, cur.String())
	}
	return words
}
