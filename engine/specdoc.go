package engine

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/stratum-go/stratum/expr"
)

// specDocument converts a spec's source text (YAML or JSON, already
// validated by ir.Build) into an ordered JSON value: the spec snapshot a run
// persists and its revision digest hashes. Scalars follow the YAML 1.2 core
// schema exactly as ir's loader reads them (yes/no are strings, 017 is 17,
// 0o17 octal, quoted scalars are strings), aliases are expanded.
//
// ir does not expose its loaded document, so this adapter re-reads the
// text; the bounds ir enforces (size, nesting, alias expansion) have
// already passed when it runs.
func specDocument(src []byte) (any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil, nil
		}
		root = root.Content[0]
	}
	return yamlValue(root, 0)
}

func yamlValue(n *yaml.Node, depth int) (any, error) {
	if depth > expr.MaxJSONDepth {
		return nil, errors.New("spec nested too deeply")
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, errors.New("alias without anchor")
		}
		return yamlValue(n.Alias, depth)
	case yaml.MappingNode:
		o := expr.NewObject(len(n.Content) / 2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind == yaml.AliasNode && k.Alias != nil {
				k = k.Alias
			}
			v, err := yamlValue(n.Content[i+1], depth+1)
			if err != nil {
				return nil, err
			}
			o.Set(k.Value, v)
		}
		return o, nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := yamlValue(c, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.ScalarNode:
		return yamlScalar(n)
	}
	return nil, fmt.Errorf("unexpected YAML node kind %d", n.Kind)
}

func yamlScalar(n *yaml.Node) (any, error) {
	tag := ""
	if n.Style&yaml.TaggedStyle != 0 {
		tag = n.ShortTag()
	}
	quoted := n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0
	if tag == "!!str" || (tag == "" && quoted) {
		return n.Value, nil
	}
	v := corePlain(n.Value)
	if f, ok := v.(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
		return nil, fmt.Errorf("non-finite number %q at line %d", n.Value, n.Line)
	}
	return v, nil
}

// corePlain resolves a plain scalar with the YAML 1.2 core schema.
func corePlain(s string) any {
	switch s {
	case "", "~", "null", "Null", "NULL":
		return nil
	case "true", "True", "TRUE":
		return true
	case "false", "False", "FALSE":
		return false
	case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF":
		return math.Inf(1)
	case "-.inf", "-.Inf", "-.INF":
		return math.Inf(-1)
	case ".nan", ".NaN", ".NAN":
		return math.NaN()
	}
	if len(s) > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'x') {
		base := 8
		if s[1] == 'x' {
			base = 16
		}
		f := 0.0
		for _, r := range s[2:] {
			d := strings.IndexRune("0123456789abcdef", toLower(r))
			if d < 0 || d >= base {
				return s
			}
			f = f*float64(base) + float64(d)
		}
		return f
	}
	if !coreFloatSyntax(s) {
		return s
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			return f
		}
		return s
	}
	return f
}

func toLower(r rune) rune {
	if r >= 'A' && r <= 'Z' {
		return r + 'a' - 'A'
	}
	return r
}

// coreFloatSyntax matches [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
func coreFloatSyntax(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	intDigits := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
		intDigits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		frac := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			frac++
		}
		if intDigits == 0 && frac == 0 {
			return false
		}
	} else if intDigits == 0 {
		return false
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
			return false
		}
	}
	return i == len(s)
}
