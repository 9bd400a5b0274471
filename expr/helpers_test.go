package expr

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

var t0ctx = context.Background()

// sameJSON is the tests' own deep equality of two values of the model,
// deliberately naive and independent of the package's equality (the
// function under test must not be its own oracle): both values are written
// as a canonical text, object keys sorted at every level, numbers by
// strconv with -0 written as 0, and the two texts compared.
func sameJSON(a, b any) bool { return canonText(a) == canonText(b) }

func canonText(v any) string {
	var sb strings.Builder
	writeCanon(&sb, v)
	return sb.String()
}

func writeCanon(sb *strings.Builder, v any) {
	switch v := v.(type) {
	case nil:
		sb.WriteString("null")
	case bool:
		sb.WriteString(strconv.FormatBool(v))
	case float64:
		if v == 0 {
			v = 0 // -0 is 0 in the language
		}
		sb.WriteString("n:" + strconv.FormatFloat(v, 'g', -1, 64))
	case string:
		sb.WriteString("s:" + strconv.Quote(v))
	case []any:
		sb.WriteString("[")
		for _, e := range v {
			writeCanon(sb, e)
			sb.WriteString(",")
		}
		sb.WriteString("]")
	case *Object:
		keys := slices.Clone(v.Keys())
		slices.Sort(keys)
		sb.WriteString("{")
		for _, k := range keys {
			e, _ := v.Get(k)
			sb.WriteString(strconv.Quote(k) + ":")
			writeCanon(sb, e)
			sb.WriteString(",")
		}
		sb.WriteString("}")
	default:
		fmt.Fprintf(sb, "<not JSON: %T %v>", v, v)
	}
}
