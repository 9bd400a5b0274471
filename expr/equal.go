package expr

// Equal is the language's deep JSON equality, the == of expressions
// (docs/expressions.md, "Operators"), for any caller that must agree with
// it (the engine compares an attempt's output with the previous one this
// way). Over values of the model:
//
//   - different types are never equal (1 and "1", 0 and false, "" and nil);
//   - numbers compare as float64 with ==, so 7 equals 7.0 and -0 equals 0
//     (NaN, which the model never holds, equals nothing, itself included);
//   - strings compare by their bytes, without Unicode normalisation;
//   - arrays ([]any) are equal when they have the same length and are
//     pairwise equal;
//   - objects (*Object) are equal when they have the same number of keys
//     and every key of one is in the other with an equal value; key order
//     does not matter, and a nil *Object is an empty object.
//
// A value outside the model (an int, a map[string]any, a []string) equals
// nothing, itself included: convert it with [FromGo] first.
func Equal(a, b any) bool {
	var work int
	return deepEqual(a, b, &work)
}

// deepEqual is Equal, adding to *work one unit per pair of values visited
// plus one per 16 bytes of strings compared, so that an evaluation can
// charge large comparisons to its budget (see [Budget]).
func deepEqual(x, y any, work *int) bool {
	*work++
	switch a := x.(type) {
	case nil:
		return y == nil
	case bool:
		b, ok := y.(bool)
		return ok && a == b
	case float64:
		b, ok := y.(float64)
		return ok && a == b
	case string:
		b, ok := y.(string)
		if !ok {
			return false
		}
		*work += min(len(a), len(b)) / bytesPerUnit
		return a == b
	case []any:
		b, ok := y.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !deepEqual(a[i], b[i], work) {
				return false
			}
		}
		return true
	case *Object:
		b, ok := y.(*Object)
		if !ok || a.Len() != b.Len() {
			return false
		}
		for i, k := range a.Keys() {
			bv, ok := b.Get(k)
			if !ok || !deepEqual(a.vals[i], bv, work) {
				return false
			}
		}
		return true
	}
	return false
}
