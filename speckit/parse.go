package speckit

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// Predicate is one compiled ensure predicate, in the v1 shape: exactly one
// of its fields is set.
type Predicate struct {
	// Expr is an expression over the step's result ("result.tests_pass == true").
	Expr string `json:"expr,omitempty" yaml:"expr,omitempty" jsonschema:"an expression over the step's result"`
	// FileExists is a workspace-relative path that must exist.
	FileExists string `json:"file_exists,omitempty" yaml:"file_exists,omitempty" jsonschema:"a workspace-relative path that must exist"`
	// FileContains names a file and a text it must contain.
	FileContains *FileContains `json:"file_contains,omitempty" yaml:"file_contains,omitempty" jsonschema:"a file and a text it must contain"`
}

// FileContains is the argument of a file_contains predicate.
type FileContains struct {
	Path string `json:"path" yaml:"path" jsonschema:"the workspace-relative path"`
	Text string `json:"text" yaml:"text" jsonschema:"the text the file must contain"`
}

// Task is one parsed task file.
type Task struct {
	// File is the task file's name (no directory).
	File string
	// ID is the step id derived from the file name.
	ID string
	// Title is the heading text without "#", "Task:" and [P] markers.
	Title string
	// Parallel is set when the title carries a [P] marker.
	Parallel bool
	// Description is the text between the title and the criteria heading.
	Description string
	// Ensures are the machine-checkable criteria, in criterion order.
	Ensures []Predicate
	// Judgment are the criteria that need judgment, in criterion order.
	Judgment []string
	// After lists the ids of the tasks this one waits for.
	After []string
}

// doneExpr is the ensure every task ends with: the agent must report done.
const doneExpr = "result.done == true"

// The whitespace of the reference's parser (JavaScript's \s and trim()):
// Unicode spaces, line terminators and the byte-order mark. Go's \s and
// strings.TrimSpace differ (ASCII only, or including U+0085), so the set is
// spelled out.
const jsSpaceClass = `\t\n\v\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}`

func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

// isLineTerminator reports the characters JavaScript's "." does not match.
func isLineTerminator(r rune) bool {
	return r == '\n' || r == '\r' || r == 0x2028 || r == 0x2029
}

func jsTrim(s string) string      { return strings.TrimFunc(s, isJSSpace) }
func jsTrimStart(s string) string { return strings.TrimLeftFunc(s, isJSSpace) }

// Patterns. Letters are matched ASCII-case-insensitively with explicit
// classes: Go's (?i) also folds "ſ" to "s" and the Kelvin sign to "k", which
// the reference does not.
var (
	titlePrefix    = regexp.MustCompile(`^#+[` + jsSpaceClass + `]*(?:Task:[` + jsSpaceClass + `]*)?`)
	parallelMarker = regexp.MustCompile(`\[[Pp]\]`)
	parallelRun    = regexp.MustCompile(`[` + jsSpaceClass + `]*\[[Pp]\][` + jsSpaceClass + `]*`)
	criteriaHeader = regexp.MustCompile(`^#+[` + jsSpaceClass + `]*[Aa][Cc][Cc][Ee][Pp][Tt][Aa][Nn][Cc][Ee] [Cc][Rr][Ii][Tt][Ee][Rr][Ii][Aa]`)
	checklistItem  = regexp.MustCompile(`^[` + jsSpaceClass + `]*-[` + jsSpaceClass + `]*\[[ xX]\]`)

	fileExists = regexp.MustCompile(`^[Ff][Ii][Ll][Ee][` + jsSpaceClass + `]+([^` + jsSpaceClass + `]+)[` + jsSpaceClass + `]+[Ee][Xx][Ii][Ss][Tt][Ss]?$`)
	// The text is "double-quoted", 'single-quoted' (non-empty, without its
	// own quote) or one word.
	fileContains = regexp.MustCompile(`^[Ff][Ii][Ll][Ee][` + jsSpaceClass + `]+([^` + jsSpaceClass + `]+)[` + jsSpaceClass + `]+[Cc][Oo][Nn][Tt][Aa][Ii][Nn][Ss]?[` + jsSpaceClass + `]+(?:"([^"]+)"|'([^']+)'|([^` + jsSpaceClass + `]+))$`)
	testsPass    = regexp.MustCompile(`\b[Tt][Ee][Ss][Tt][Ss]?\b[^\n\r\x{2028}\x{2029}]*\b[Pp][Aa][Ss][Ss]`)
)

// lintPhrases are matched anywhere in a criterion, ignoring ASCII case.
var lintPhrases = []string{"no lint error", "lint pass", "lint clean"}

// ParseTask parses the text of one task file. name is the file name (it gives
// the step id, [StepID]). Every text parses: a file without a heading has an
// empty title, a file without a criteria heading has no criteria. Invalid UTF-8
// is replaced with U+FFFD, as a UTF-8 decoder would.
func ParseTask(name, text string) Task {
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	t := Task{File: name, ID: StepID(name), Ensures: []Predicate{}, Judgment: []string{}}
	lines := splitLines(text)

	titleAt := -1
	for i, l := range lines {
		if strings.HasPrefix(jsTrimStart(l), "#") {
			titleAt = i
			break
		}
	}
	if titleAt >= 0 {
		raw := titlePrefix.ReplaceAllString(jsTrim(lines[titleAt]), "")
		t.Parallel = parallelMarker.MatchString(raw)
		t.Title = jsTrim(parallelRun.ReplaceAllString(raw, " "))
	}

	headerAt := -1
	for i, l := range lines {
		if criteriaHeader.MatchString(l) {
			headerAt = i
			break
		}
	}

	// Without a heading the description starts at the second line: the
	// reference skips the first line whatever it holds.
	start := titleAt + 1
	if titleAt < 0 {
		start = 1
	}
	end := len(lines)
	if headerAt >= 0 {
		end = headerAt
	}
	if start < end {
		t.Description = jsTrim(strings.Join(lines[start:end], "\n"))
	}

	if headerAt >= 0 {
		for _, l := range lines[headerAt+1:] {
			crit, ok := criterion(l)
			if !ok {
				continue
			}
			if p, ok := CompileCriterion(crit); ok {
				t.Ensures = append(t.Ensures, p)
			} else {
				t.Judgment = append(t.Judgment, crit)
			}
		}
	}
	return t
}

// splitLines splits on "\n" and "\r\n" (a lone "\r" stays in its line).
func splitLines(text string) []string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// criterion returns the text of a checklist line "- [ ] text" (also "[x]",
// "[X]"), trimmed. The text after the box must be non-empty; it may be only
// whitespace, which gives an empty criterion.
func criterion(line string) (string, bool) {
	loc := checklistItem.FindStringIndex(line)
	if loc == nil {
		return "", false
	}
	rest := line[loc[1]:]
	// The reference's pattern is `\s*(.+)$` where "." stops at line
	// terminators: everything up to the last line terminator must be
	// whitespace, and something must follow it.
	last := strings.LastIndexFunc(rest, isLineTerminator)
	if last >= 0 {
		_, size := utf8.DecodeRuneInString(rest[last:])
		if strings.TrimLeftFunc(rest[:last], isJSSpace) != "" {
			return "", false
		}
		rest = rest[last+size:]
	}
	if rest == "" {
		return "", false
	}
	return jsTrim(rest), true
}

// CompileCriterion turns one criterion text into an ensure predicate when it
// has a known form; ok is false for a criterion that needs judgment. The
// forms are tried in order, ignoring case:
//
//	file PATH exists                     -> {file_exists: PATH}
//	file PATH contains "TEXT"            -> {file_contains: {path: PATH, text: TEXT}}
//	  (also 'TEXT' or a single word; every " in TEXT becomes \")
//	... test(s) ... pass ...             -> {expr: "result.tests_pass == true"}
//	no lint error(s) / lint pass(es) / lint clean
//	                                     -> {expr: "result.lint_clean == true"}
func CompileCriterion(text string) (Predicate, bool) {
	text = jsTrim(text)
	if m := fileExists.FindStringSubmatch(text); m != nil {
		return Predicate{FileExists: m[1]}, true
	}
	if m := fileContains.FindStringSubmatch(text); m != nil {
		needle := m[2] + m[3] + m[4] // exactly one group matched
		// The reference escapes double quotes in the text (a quirk carried
		// over from its Python predecessor); kept so both compile alike.
		needle = strings.ReplaceAll(needle, `"`, `\"`)
		return Predicate{FileContains: &FileContains{Path: m[1], Text: needle}}, true
	}
	if testsPass.MatchString(text) {
		return Predicate{Expr: "result.tests_pass == true"}, true
	}
	lower := asciiLower(text)
	for _, p := range lintPhrases {
		if strings.Contains(lower, p) {
			return Predicate{Expr: "result.lint_clean == true"}, true
		}
	}
	return Predicate{}, false
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

// StepID derives a step id from a task file name: the name without its
// final extension, lower-cased, every character other than a-z and 0-9
// replaced by "_", leading and trailing "_" removed, prefixed with "t" when
// it does not start with a letter, and "task" when nothing is left
// ("01-research.md" -> "t01_research", "My Task.md" -> "my_task").
func StepID(name string) string {
	stem := name
	// A name that is only an extension (".md") is a dot-file with no
	// extension, as Node's and Python's path functions treat it.
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		stem = name[:i]
	}
	var b strings.Builder
	for _, r := range stem {
		switch {
		case 'a' <= r && r <= 'z', '0' <= r && r <= '9':
			b.WriteRune(r)
		case 'A' <= r && r <= 'Z':
			b.WriteRune(r + ('a' - 'A'))
		case r == 0x212a: // KELVIN SIGN lower-cases to an ASCII k
			b.WriteByte('k')
		case r == 0x130: // İ lower-cases to i + COMBINING DOT ABOVE
			b.WriteString("i_")
		case r > 0xffff:
			// The reference replaces UTF-16 code units: two for a
			// character outside the Basic Multilingual Plane.
			b.WriteString("__")
		default:
			b.WriteByte('_')
		}
	}
	id := strings.Trim(b.String(), "_")
	switch {
	case id == "":
		return "task"
	case id[0] < 'a' || id[0] > 'z':
		return "t" + id
	}
	return id
}
