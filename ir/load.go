package ir

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/internal/yamlerr"
	"gopkg.in/yaml.v3"
)

// Bounds on the input, so that a hostile or broken document is refused
// quickly instead of exhausting memory or time.
const (
	// MaxSpecBytes is the largest accepted source text.
	MaxSpecBytes = 4 << 20
	// MaxNesting is the deepest accepted nesting of mappings and lists
	// (the root mapping is depth 1).
	MaxNesting = 128
	// MaxNodes bounds the number of values in the document after alias
	// expansion: a "billion laughs" document is refused without expanding it.
	MaxNodes = 500_000
	// MaxKeyLength bounds a mapping key, in characters. YAML already limits
	// plain and quoted keys to 1024 characters; this extends the bound to
	// explicit ("? key") and aliased keys, which would otherwise make every
	// path below them as long.
	MaxKeyLength = 1024
)

type nodeKind uint8

const (
	nullNode nodeKind = iota
	boolNode
	numberNode
	stringNode
	mapNode
	listNode
)

func (k nodeKind) String() string {
	switch k {
	case nullNode:
		return "null"
	case boolNode:
		return "a boolean"
	case numberNode:
		return "a number"
	case stringNode:
		return "a string"
	case mapNode:
		return "a mapping"
	case listNode:
		return "a list"
	}
	return "unknown"
}

// node is one value of the loaded document with its source position. Nodes
// reached through a YAML alias are shared with their anchor, so the tree is
// never mutated after loading.
type node struct {
	kind      nodeKind
	b         bool // boolNode
	line, col int32
	str       string  // stringNode (and the source text of other scalars)
	num       float64 // numberNode
	// kids holds a list's items, or a mapping's keys (kind stringNode, in
	// order) followed by its values: one slice keeps nodes small, since
	// specs have many of them.
	kids []*node
}

// keys returns a mapping's key nodes.
func (n *node) keys() []*node { return n.kids[:len(n.kids)/2] }

// vals returns a mapping's values, parallel to keys.
func (n *node) vals() []*node { return n.kids[len(n.kids)/2:] }

// items returns a list's items.
func (n *node) items() []*node { return n.kids }

// newMapKids lays out keys and values as node.kids expects.
func newMapKids(keys, vals []*node) []*node {
	kids := make([]*node, 0, 2*len(keys))
	kids = append(kids, keys...)
	return append(kids, vals...)
}

// get returns the value under key of a mapping node, or nil.
func (n *node) get(key string) *node {
	if n == nil || n.kind != mapNode {
		return nil
	}
	half := len(n.kids) / 2
	for i, k := range n.kids[:half] {
		if k.str == key {
			return n.kids[half+i]
		}
	}
	return nil
}

// keyNode returns the key node for key of a mapping node, or nil.
func (n *node) keyNode(key string) *node {
	if n == nil || n.kind != mapNode {
		return nil
	}
	for _, k := range n.keys() {
		if k.str == key {
			return k
		}
	}
	return nil
}

// load parses src as one YAML document into a positioned tree. Problems
// are diagnostics; root is nil when loading failed.
func load(src []byte, d *diags) *node {
	if !sizeOK(src, d) {
		return nil
	}
	if root := fastJSON(src); root != nil {
		return root
	}
	if root := fastParse(src); root != nil {
		return root
	}
	return loadYAML(src, d)
}

// loadSlow is load without the fast paths, for the tests that compare
// them with yaml.v3.
func loadSlow(src []byte, d *diags) *node {
	if !sizeOK(src, d) {
		return nil
	}
	return loadYAML(src, d)
}

func sizeOK(src []byte, d *diags) bool {
	if len(src) > MaxSpecBytes {
		d.add(nil, CodeYAMLLimit, "", "the spec is %d bytes; the limit is %d bytes (%d MiB)", len(src), MaxSpecBytes, MaxSpecBytes>>20)
		return false
	}
	return true
}

// loadYAML parses src with yaml.v3, the general path.
func loadYAML(src []byte, d *diags) *node {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	err := dec.Decode(&doc)
	if errors.Is(err, io.EOF) {
		// An empty document (or only comments) is the null root.
		return &node{kind: nullNode, line: 1, col: 1}
	}
	if err != nil {
		// yaml.v3's own line is often not the one to fix (see
		// internal/yamlerr); Locate finds it and says what would be right.
		p := yamlerr.Locate(src, err)
		d.add(&node{line: int32(p.Line), col: int32(max(p.Column, 1))}, CodeYAMLSyntax, "", "YAML syntax error: %s", p.Text())
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		line := 1
		if err == nil {
			line = extra.Line
		} else {
			line = yamlerr.Locate(src, err).Line
		}
		d.add(&node{line: int32(line), col: 1}, CodeYAMLSyntax, "", "the file holds more than one YAML document (a \"---\" separator); a spec is exactly one document")
		return nil
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return &node{kind: nullNode, line: 1, col: 1}
		}
		root = root.Content[0]
	}
	c := converter{d: d}
	// Without a '*' in the text there is no alias, and the node count is
	// bounded by the size limit; otherwise count the expansion first.
	if bytes.IndexByte(src, '*') >= 0 {
		c.sizes = make(map[*yaml.Node]int)
		c.done = make(map[*yaml.Node]*node)
	}
	if size := c.expandedSize(root, 0); c.failed {
		return nil
	} else if size > MaxNodes {
		d.add(&node{line: int32(root.Line), col: int32(root.Column)}, CodeYAMLLimit, "",
			"the document expands to more than %d values (YAML aliases multiply their anchors); write the values out or use fewer aliases", MaxNodes)
		return nil
	}
	out := c.convert(root, 1)
	if c.failed {
		return nil
	}
	return out
}

type converter struct {
	d      *diags
	sizes  map[*yaml.Node]int   // expanded value count per anchored node
	done   map[*yaml.Node]*node // converted anchored nodes, shared by aliases
	failed bool
}

// expandedSize counts the values n stands for once every alias is expanded,
// memoising anchored nodes so that the count itself is linear in the source.
// It saturates just above MaxNodes.
func (c *converter) expandedSize(n *yaml.Node, depth int) int {
	if c.failed || c.sizes == nil {
		return 0
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			c.fail(n, CodeYAMLSyntax, "alias *%s names no anchor", n.Value)
			return 0
		}
		return c.expandedSize(n.Alias, depth)
	}
	if n.Anchor != "" {
		if s, ok := c.sizes[n]; ok {
			if s < 0 {
				c.fail(n, CodeYAMLSyntax, "anchor &%s contains an alias to itself; a spec cannot be recursive", n.Anchor)
				return 0
			}
			return s
		}
		c.sizes[n] = -1
	}
	total := 1
	for _, ch := range n.Content {
		total += c.expandedSize(ch, depth+1)
		if total > MaxNodes {
			total = MaxNodes + 1
		}
	}
	if n.Anchor != "" {
		c.sizes[n] = total
	}
	return total
}

func (c *converter) fail(n *yaml.Node, code, format string, args ...any) {
	c.d.add(&node{line: int32(n.Line), col: int32(n.Column)}, code, "", format, args...)
	c.failed = true
}

func (c *converter) convert(n *yaml.Node, depth int) *node {
	if c.failed {
		return nil
	}
	if n.Kind == yaml.AliasNode {
		return c.convert(n.Alias, depth)
	}
	if n.Anchor != "" && c.done != nil {
		if out, ok := c.done[n]; ok {
			return out
		}
	}
	out := &node{line: int32(n.Line), col: int32(n.Column)}
	switch n.Kind {
	case yaml.ScalarNode:
		c.scalar(n, out)
	case yaml.MappingNode:
		if depth > MaxNesting {
			c.fail(n, CodeYAMLLimit, "mappings and lists are nested more than %d deep", MaxNesting)
			return nil
		}
		out.kind = mapNode
		pairs := len(n.Content) / 2
		keys := make([]*node, 0, pairs)
		vals := make([]*node, 0, pairs)
		var seen map[string]*node
		if pairs > 8 {
			seen = make(map[string]*node, pairs)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			kn, vn := n.Content[i], n.Content[i+1]
			if kn.Kind == yaml.AliasNode && kn.Alias != nil {
				kn = kn.Alias
			}
			if kn.Kind != yaml.ScalarNode {
				c.fail(kn, CodeYAMLSyntax, "a mapping key must be a plain word or string, not %s", yamlKindName(kn.Kind))
				return nil
			}
			var kv node
			c.scalar(kn, &kv)
			if c.failed {
				return nil
			}
			key := &node{kind: stringNode, line: int32(kn.Line), col: int32(kn.Column), str: keyString(&kv)}
			if len(key.str) > MaxKeyLength && utf8.RuneCountInString(key.str) > MaxKeyLength {
				c.fail(kn, CodeYAMLLimit, "a mapping key is %d characters long; keys are at most %d (the YAML limit on plain keys)", utf8.RuneCountInString(key.str), MaxKeyLength)
				return nil
			}
			var prev *node
			if seen != nil {
				prev = seen[key.str]
				seen[key.str] = key
			} else {
				for _, k := range keys {
					if k.str == key.str {
						prev = k
						break
					}
				}
			}
			if prev != nil {
				c.fail(kn, CodeYAMLDuplicateKey, "key %q is repeated in this mapping (first at line %d); keep one", key.str, prev.line)
				return nil
			}
			v := c.convert(vn, depth+1)
			if c.failed {
				return nil
			}
			keys = append(keys, key)
			vals = append(vals, v)
		}
		out.kids = newMapKids(keys, vals)
	case yaml.SequenceNode:
		if depth > MaxNesting {
			c.fail(n, CodeYAMLLimit, "mappings and lists are nested more than %d deep", MaxNesting)
			return nil
		}
		out.kind = listNode
		out.kids = make([]*node, 0, len(n.Content))
		for _, ch := range n.Content {
			v := c.convert(ch, depth+1)
			if c.failed {
				return nil
			}
			out.kids = append(out.kids, v)
		}
	default:
		c.fail(n, CodeYAMLSyntax, "unexpected YAML node")
		return nil
	}
	if n.Anchor != "" && c.done != nil {
		c.done[n] = out
	}
	return out
}

func yamlKindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return "a complex value"
}

// scalar resolves a scalar with the YAML 1.2 core schema, as the reference
// loader does: yes/no/on/off are strings, 017 is decimal, 0o17 octal.
// Quoted scalars are always strings.
func (c *converter) scalar(n *yaml.Node, out *node) {
	out.kind = stringNode
	out.str = n.Value
	tag := ""
	if n.Style&yaml.TaggedStyle != 0 {
		tag = n.ShortTag()
	}
	quoted := n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0
	switch tag {
	case "":
		if quoted {
			return
		}
		resolvePlain(n.Value, out)
	case "!!str":
	case "!!null", "!!bool", "!!int", "!!float":
		resolvePlain(n.Value, out)
		want := map[string]nodeKind{"!!null": nullNode, "!!bool": boolNode, "!!int": numberNode, "!!float": numberNode}[tag]
		if out.kind != want {
			c.fail(n, CodeYAMLSyntax, "%q is not a valid %s value", n.Value, tag)
		}
	default:
		c.fail(n, CodeYAMLSyntax, "unsupported YAML tag %s; write plain values", n.Tag)
	}
}

// keyString is the mapping key a resolved key scalar stands for. The
// reference loader turns non-string keys into property names as
// JavaScript does: null is "", booleans "true"/"false", numbers their
// JavaScript string (so 1.0, +1 and 0x1 are all the key "1", and repeat
// each other).
func keyString(k *node) string {
	switch k.kind {
	case nullNode:
		return ""
	case boolNode:
		if k.b {
			return "true"
		}
		return "false"
	case numberNode:
		return expr.FormatNumber(k.num)
	}
	return k.str
}

// plainKey resolves a plain (unquoted, untagged) mapping key.
func plainKey(s string) string {
	var k node
	k.kind, k.str = stringNode, s
	resolvePlain(s, &k)
	return keyString(&k)
}

func resolvePlain(s string, out *node) {
	switch s {
	case "", "~", "null", "Null", "NULL":
		out.kind = nullNode
		return
	case "true", "True", "TRUE":
		out.kind, out.b = boolNode, true
		return
	case "false", "False", "FALSE":
		out.kind, out.b = boolNode, false
		return
	case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF":
		out.kind, out.num = numberNode, math.Inf(1)
		return
	case "-.inf", "-.Inf", "-.INF":
		out.kind, out.num = numberNode, math.Inf(-1)
		return
	case ".nan", ".NaN", ".NAN":
		out.kind, out.num = numberNode, math.NaN()
		return
	}
	if f, ok := parseCoreNumber(s); ok {
		out.kind, out.num = numberNode, f
	}
}

// parseCoreNumber recognises the YAML 1.2 core schema integer and float
// forms: [-+]?[0-9]+, 0o[0-7]+, 0x[0-9a-fA-F]+ and
// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?.
func parseCoreNumber(s string) (float64, bool) {
	if len(s) > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'x') {
		base := 8
		if s[1] == 'x' {
			base = 16
		}
		u, err := strconv.ParseUint(s[2:], base, 64)
		if err != nil {
			var ne *strconv.NumError
			if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) && allDigits(s[2:], base) {
				f := 0.0
				for _, r := range s[2:] {
					f = f*float64(base) + float64(digitVal(r))
				}
				return f, true
			}
			return 0, false
		}
		return float64(u), true
	}
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	intDigits := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
		intDigits++
	}
	fracDigits := 0
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			fracDigits++
		}
		if intDigits == 0 && fracDigits == 0 {
			return 0, false
		}
	} else if intDigits == 0 {
		return 0, false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		exp := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			exp++
		}
		if exp == 0 {
			return 0, false
		}
	}
	if i != len(s) {
		return 0, false
	}
	// strconv accepts everything this grammar does, except a trailing dot
	// ("1.") which it also accepts; leading zeros are decimal.
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			return f, true // ±Inf or 0 on overflow/underflow, as JavaScript reads it
		}
		return 0, false
	}
	return f, true
}

func allDigits(s string, base int) bool {
	for _, r := range s {
		if v := digitVal(r); v < 0 || v >= base {
			return false
		}
	}
	return s != ""
}

func digitVal(r rune) int {
	switch {
	case r >= '0' && r <= '9':
		return int(r - '0')
	case r >= 'a' && r <= 'f':
		return int(r-'a') + 10
	case r >= 'A' && r <= 'F':
		return int(r-'A') + 10
	}
	return -1
}

func fmtFloat(f float64) string {
	if math.Abs(f) >= 1e21 || (f != 0 && math.Abs(f) < 1e-6) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}
