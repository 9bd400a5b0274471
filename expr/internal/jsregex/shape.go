package jsregex

import (
	"fmt"
	"unicode/utf16"
)

// MaxQuantifiers is the most quantified atoms a pattern may contain.
const MaxQuantifiers = 32

// ShapeError explains why the shape filter rejects a pattern.
type ShapeError struct{ Reason string }

func (e *ShapeError) Error() string { return "regex rejected by the safety filter: " + e.Reason }

// group is an open parenthesis of the shape scan.
type group struct {
	hasQuantifier   bool // contains a quantified atom (or a group that had one)
	hasAlternation  bool
	afterQuantified bool // the atom before its '(' was quantified
}

// Shape applies the reference's conservative filter: no backreference, no
// "(?" construct, no nested quantifier, no two adjacent quantified atoms
// (groups are transparent for adjacency), at most MaxQuantifiers quantified
// atoms, balanced groups, terminated classes. It scans UTF-16 code units, as
// the reference does, so an astral character is two atoms here.
func Shape(pattern string) error {
	p := utf16.Encode([]rune(pattern))
	for i := 0; i+1 < len(p); i++ {
		if p[i] == '\\' && p[i+1] >= '1' && p[i+1] <= '9' {
			return &ShapeError{"backreferences are not allowed"}
		}
		if p[i] == '(' && p[i+1] == '?' {
			return &ShapeError{`"(?" constructs (non-capturing groups, lookaround, named groups) are not allowed`}
		}
	}
	var stack []group
	quantified := 0
	lastQuantified := false
	for i := 0; i < len(p); {
		c := p[i]
		if c == '(' {
			stack = append(stack, group{afterQuantified: lastQuantified})
			i++
			continue
		}
		if c == '|' {
			if len(stack) > 0 {
				stack[len(stack)-1].hasAlternation = true
			}
			lastQuantified = false
			i++
			continue
		}
		var end int
		var closed *group
		switch c {
		case ')':
			if len(stack) == 0 {
				return &ShapeError{"unbalanced ')'"}
			}
			g := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			closed = &g
			end = i + 1
		case '[':
			j := i + 1
			for j < len(p) && p[j] != ']' {
				if p[j] == '\\' {
					j += 2
				} else {
					j++
				}
			}
			if j >= len(p) {
				return &ShapeError{"unterminated character class"}
			}
			end = j + 1
		case '\\':
			if i+1 >= len(p) {
				return &ShapeError{"trailing backslash"}
			}
			end = i + 2
		case '*', '+', '?', '{':
			return &ShapeError{fmt.Sprintf("%q at position %d has nothing to repeat (escape it as \\%c for the character itself)", rune(c), i, rune(c))}
		default:
			end = i + 1
		}
		trailingQuantified := lastQuantified
		next := quantifierEnd(p, end)
		isQuantified := next != end
		if isQuantified {
			quantified++
			if quantified > MaxQuantifiers {
				return &ShapeError{fmt.Sprintf("more than %d quantified atoms", MaxQuantifiers)}
			}
			neighbour := lastQuantified
			if closed != nil {
				neighbour = closed.afterQuantified
			}
			if neighbour {
				return &ShapeError{"adjacent quantified atoms"}
			}
			if closed != nil && (closed.hasQuantifier || closed.hasAlternation) {
				return &ShapeError{"nested quantifier"}
			}
			if len(stack) > 0 {
				stack[len(stack)-1].hasQuantifier = true
			}
		}
		if closed != nil && (closed.hasQuantifier || closed.hasAlternation) && len(stack) > 0 {
			stack[len(stack)-1].hasQuantifier = true
		}
		lastQuantified = isQuantified || (closed != nil && trailingQuantified)
		i = next
	}
	if len(stack) > 0 {
		return &ShapeError{"unclosed group"}
	}
	return nil
}

// quantifierEnd returns the index just past a quantifier starting at i (*,
// +, ?, {m}, {m,}, {m,n}, each optionally followed by a lazy ?), or i when
// there is none there.
func quantifierEnd(p []uint16, i int) int {
	if i >= len(p) {
		return i
	}
	end := i
	switch p[i] {
	case '*', '+', '?':
		end = i + 1
	case '{':
		j := i + 1
		digits := 0
		for j < len(p) && p[j] >= '0' && p[j] <= '9' {
			j++
			digits++
		}
		if digits == 0 {
			return i
		}
		if j < len(p) && p[j] == ',' {
			j++
			for j < len(p) && p[j] >= '0' && p[j] <= '9' {
				j++
			}
		}
		if j >= len(p) || p[j] != '}' {
			return i
		}
		end = j + 1
	default:
		return i
	}
	if end < len(p) && p[end] == '?' {
		end++
	}
	return end
}
