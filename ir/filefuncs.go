package ir

// usesFileFunctions reports whether an expression calls file_exists or
// file_contains anywhere (spec/ir.md 8.6). An expression that does not
// parse counts as calling neither.
//
// STAND-IN: this is a careful lexical approximation, to be replaced by
//
//	p, err := expr.Compile(src)
//	return err == nil && p.UsesFileFunctions()
//
// when package expr's parser lands. It finds the identifier file_exists or
// file_contains followed (after optional whitespace) by "(", outside string
// literals and not as a member name (x.file_exists(...) is a member access,
// not a call of the builtin). It returns false for a source whose string
// literals or parentheses are unbalanced, which the parser would reject;
// other syntax errors the parser would catch are not detected here.
func usesFileFunctions(src string) bool {
	depth := 0
	found := false
	prevDot := false
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\'' || c == '"':
			j := i + 1
			closed := false
			for j < len(src) {
				if src[j] == '\\' {
					j += 2
					continue
				}
				if src[j] == c {
					closed = true
					break
				}
				j++
			}
			if !closed {
				return false
			}
			i = j + 1
			prevDot = false
			continue
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth < 0 {
				return false
			}
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '$':
			j := i + 1
			for j < len(src) && (isFieldChar(src[j]) || src[j] == '$') {
				j++
			}
			word := src[i:j]
			if !prevDot && (word == "file_exists" || word == "file_contains") {
				k := j
				for k < len(src) && isExprSpace(src[k]) {
					k++
				}
				if k < len(src) && src[k] == '(' {
					found = true
				}
			}
			i = j
			prevDot = false
			continue
		case c >= '0' && c <= '9':
			// A number; a following '.' starts a fraction, not a member.
			j := i + 1
			for j < len(src) && (src[j] >= '0' && src[j] <= '9' || src[j] == '.' || src[j] == 'e' || src[j] == 'E') {
				j++
			}
			i = j
			prevDot = false
			continue
		}
		if !isExprSpace(c) {
			prevDot = c == '.'
		}
		i++
	}
	return found && depth == 0
}

func isExprSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}
