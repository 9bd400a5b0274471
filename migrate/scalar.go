package migrate

import (
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// scalarKind is the type a YAML scalar resolves to under the YAML 1.2 core
// schema, which is what v0.x specs were read with. yaml.v3 resolves plain
// scalars slightly differently (it accepts underscores in numbers and reads
// a leading-zero integer as octal), so plain scalars are resolved here.
type scalarKind int

const (
	kindString scalarKind = iota
	kindNull
	kindBool
	kindInt
	kindFloat
)

// YAML 1.2 core schema patterns for plain scalars.
var (
	coreNull     = regexp.MustCompile(`^(?:~|null|Null|NULL)?$`)
	coreTrue     = regexp.MustCompile(`^(?:true|True|TRUE)$`)
	coreFalse    = regexp.MustCompile(`^(?:false|False|FALSE)$`)
	coreDecimal  = regexp.MustCompile(`^[-+]?[0-9]+$`)
	coreOctal    = regexp.MustCompile(`^0o[0-7]+$`)
	coreHex      = regexp.MustCompile(`^0x[0-9a-fA-F]+$`)
	coreFloat    = regexp.MustCompile(`^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$`)
	coreInfinity = regexp.MustCompile(`^[-+]?\.(?:inf|Inf|INF)$`)
	coreNaN      = regexp.MustCompile(`^\.(?:nan|NaN|NAN)$`)
)

// kindOf classifies a scalar node (aliases already resolved).
func kindOf(n *yaml.Node) scalarKind {
	if n.Style&yaml.TaggedStyle != 0 {
		switch n.Tag {
		case "!!null":
			return kindNull
		case "!!bool":
			return kindBool
		case "!!int":
			return kindInt
		case "!!float":
			return kindFloat
		default:
			return kindString
		}
	}
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return kindString
	}
	v := n.Value
	switch {
	case coreNull.MatchString(v):
		return kindNull
	case coreTrue.MatchString(v), coreFalse.MatchString(v):
		return kindBool
	case coreDecimal.MatchString(v), coreOctal.MatchString(v), coreHex.MatchString(v):
		return kindInt
	case coreFloat.MatchString(v), coreInfinity.MatchString(v), coreNaN.MatchString(v):
		return kindFloat
	}
	return kindString
}

// numberValue returns the value of a number scalar as a float64, which is
// how the reference holds every number. ok is false when the text is not a
// number after all (an explicit !!int tag on non-numeric text).
func numberValue(text string) (f float64, ok bool) {
	switch {
	case coreOctal.MatchString(text):
		return bigToFloat(text[2:], 8)
	case coreHex.MatchString(text):
		return bigToFloat(text[2:], 16)
	case coreInfinity.MatchString(text):
		if strings.HasPrefix(text, "-") {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	case coreNaN.MatchString(text):
		return math.NaN(), true
	case coreDecimal.MatchString(text), coreFloat.MatchString(text):
		// Leading zeros are decimal in YAML 1.2. ParseFloat rounds to the
		// nearest double exactly as JavaScript's Number() does.
		f, err := strconv.ParseFloat(strings.TrimPrefix(text, "+"), 64)
		if err != nil && !isRangeError(err) {
			return 0, false
		}
		return f, true
	}
	return 0, false
}

func isRangeError(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func bigToFloat(digits string, base int) (float64, bool) {
	var i big.Int
	if _, ok := i.SetString(digits, base); !ok {
		return 0, false
	}
	f, _ := new(big.Float).SetInt(&i).Float64()
	return f, true
}
