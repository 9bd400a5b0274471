package ir

import (
	"sort"
	"strings"
)

// This file holds the strings of a step that are scanned for ${...}
// references ("leaves") and the lazily built locations of diagnostics.

// pathPart is one segment of a location inside a with value: a key of a
// mapping or a list position. Locations are chains of parts, turned into
// strings only when a diagnostic or a Site needs them: building the path
// of every value eagerly costs the nesting depth times the key lengths per
// value, which a hostile spec turns into gigabytes.
type pathPart struct {
	parent *pathPart
	base   string // set on the root part: the path of the with mapping
	key    string
	index  int
	isKey  bool
}

func (p *pathPart) String() string {
	var parts []*pathPart
	for q := p; q != nil; q = q.parent {
		parts = append(parts, q)
	}
	var b strings.Builder
	for i := len(parts) - 1; i >= 0; i-- {
		q := parts[i]
		switch {
		case q.parent == nil:
			b.WriteString(q.base)
		case q.isKey:
			b.WriteByte('.')
			b.WriteString(q.key)
		default:
			b.WriteByte('[')
			b.WriteString(itoa(q.index))
			b.WriteByte(']')
		}
	}
	return b.String()
}

// loc is a location in the document, made a string only when a
// diagnostic or a Site path needs it: base + "." + rel (or base when rel
// is empty), or at for strings inside with values.
type loc struct {
	at        *pathPart
	base, rel string
}

func (p loc) String() string {
	switch {
	case p.at != nil:
		return p.at.String()
	case p.rel == "":
		return p.base
	}
	return p.base + "." + p.rel
}

func locOf(path string) loc { return loc{base: path} }

// leaf is one string scanned for references (docs/spec-language.md, "How validation proceeds").
type leaf struct {
	// The leaf's path is base + "." + rel (or base when rel is empty), or
	// at (for strings inside with), built only when needed: most leaves
	// never appear in a diagnostic.
	base, rel string
	at        *pathPart
	n         *node
	text      string
	stage     int // -1 outside fanout stages
	tmpl      *Template
	tok       string // the malformed token, when syn != templateOK
	// The small fields share one word (a flow holds a leaf per string).
	group      leafGroup
	syn        templateSyntax
	expression bool
	over       bool
	// filePred: a file_exists path or a file_contains path or text; its
	// references are read by the expression the predicate stands for.
	filePred bool
}

// exprSite tells what result means in an expression leaf.
func (l *leaf) exprSite() exprSite {
	switch {
	case l.group == groupWhen, l.group == groupSet, l.group == groupStage && l.rel == "when":
		return siteOutputs
	}
	return siteResult
}

func (l *leaf) loc() loc { return loc{at: l.at, base: l.base, rel: l.rel} }

// ensureRels holds the common "ensure[i].expr" suffixes.
var ensureRels = [...]string{"ensure[0].expr", "ensure[1].expr", "ensure[2].expr", "ensure[3].expr", "ensure[4].expr", "ensure[5].expr", "ensure[6].expr", "ensure[7].expr"}

func ensureRel(i int) string {
	if i < len(ensureRels) {
		return ensureRels[i]
	}
	return indexPath("ensure", i) + ".expr"
}

// leafGroup orders leaves in scanning order (docs/spec-language.md, "How validation proceeds").
type leafGroup uint8

const (
	groupDo leafGroup = iota
	groupWhen
	groupSet
	groupUntil
	groupEnsure
	groupWith
	groupEvalIn
	groupOver
	groupStage
)

// leafLater records a leaf; orderLeaves puts the groups in scanning order
// (fields are visited in declaration order, which differs).
// It parses the leaf's template once and returns it.
func (si *stepInfo) leafLater(group leafGroup, l leaf) *Template {
	l.group = group
	l.tmpl, l.syn, l.tok = si.fl.tmpl.parseTemplate(l.text)
	if si.leaves == nil {
		if cap(si.fl.leafFree) < 4 {
			si.fl.leafFree = make([]leaf, 0, 64)
		}
		si.leaves = si.fl.leafFree
	}
	si.leaves = append(si.leaves, l)
	return l.tmpl
}

// orderLeaves sorts the step's leaves into scanning order; the strings of
// with are scanned only on a run step (scanWith).
func (si *stepInfo) orderLeaves(scanWith bool) {
	sorted := true
	for i := 1; i < len(si.leaves); i++ {
		if si.leaves[i].group < si.leaves[i-1].group {
			sorted = false
			break
		}
	}
	if !sorted {
		sort.SliceStable(si.leaves, func(i, j int) bool { return si.leaves[i].group < si.leaves[j].group })
	}
	if !scanWith {
		// with strings are scanned only on run steps. Leaves before the
		// first with leaf stay where they are (no copying them onto
		// themselves).
		first := len(si.leaves)
		for i := range si.leaves {
			if si.leaves[i].group == groupWith {
				first = i
				break
			}
		}
		out := si.leaves[:first]
		for i := first; i < len(si.leaves); i++ {
			if si.leaves[i].group != groupWith {
				out = append(out, si.leaves[i])
			}
		}
		si.leaves = out
	}
}
