package jsregex

import (
	"slices"
	"unicode"
)

const maxRune = unicode.MaxRune

// rng is an inclusive range of code points.
type rng struct{ lo, hi rune }

// set is a sorted list of disjoint, non-adjacent ranges.
type set []rng

func single(r rune) set { return set{{r, r}} }

// normalize sorts and merges ranges.
func normalize(rs []rng) set {
	if len(rs) == 0 {
		return set{}
	}
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b rng) int { return int(a.lo - b.lo) })
	out := set{rs[0]}
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if r.lo <= last.hi+1 {
			last.hi = max(last.hi, r.hi)
			continue
		}
		out = append(out, r)
	}
	return out
}

func union(a, b set) set {
	return normalize(append(slices.Clone(a), b...))
}

func complement(s set) set {
	var out set
	next := rune(0)
	for _, r := range s {
		if r.lo > next {
			out = append(out, rng{next, r.lo - 1})
		}
		next = r.hi + 1
	}
	if next <= maxRune {
		out = append(out, rng{next, maxRune})
	}
	return out
}

func fromTable(t *unicode.RangeTable) set {
	var rs []rng
	for _, r := range t.R16 {
		if r.Stride == 1 {
			rs = append(rs, rng{rune(r.Lo), rune(r.Hi)})
			continue
		}
		for c := rune(r.Lo); c <= rune(r.Hi); c += rune(r.Stride) {
			rs = append(rs, rng{c, c})
		}
	}
	for _, r := range t.R32 {
		if r.Stride == 1 {
			rs = append(rs, rng{rune(r.Lo), rune(r.Hi)})
			continue
		}
		for c := rune(r.Lo); c <= rune(r.Hi); c += rune(r.Stride) {
			rs = append(rs, rng{c, c})
		}
	}
	return normalize(rs)
}

func fromTables(ts ...*unicode.RangeTable) set {
	var s set
	for _, t := range ts {
		s = union(s, fromTable(t))
	}
	return s
}

// The class escapes of the u dialect without the i flag: \d and \w are
// ASCII, \s is ECMAScript's WhiteSpace and LineTerminator.
var (
	digitSet = set{{'0', '9'}}
	wordSet  = set{{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}
	spaceSet = normalize([]rng{
		{'\t', '\r'}, {' ', ' '}, {0xA0, 0xA0}, {0x1680, 0x1680}, {0x2000, 0x200A},
		{0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF},
	})
	// dotSet is what '.' matches without the s flag: anything but a line
	// terminator.
	dotSet = complement(set{{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}})
)
