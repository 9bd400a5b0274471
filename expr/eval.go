package expr

import (
	"context"
	"fmt"
	"math"
	"strings"
)

// MaxBindingDepth is how deep a value may sit inside a binding (the bound
// value itself is depth 0); deeper is a resource_limit.
const MaxBindingDepth = 128

// MaxConcatBytes bounds the bytes of new strings one evaluation may build
// with '+' and with str() of an array or object. A chain of 2048 '+' over a
// large bound string, or a hundred nested str(result) comparisons, would
// otherwise build or hold gigabytes; the reference is bounded only by V8's
// maximum string length. Reaching it is a resource_limit.
const MaxConcatBytes = 64 << 20

type evaluator struct {
	ctx     context.Context
	done    <-chan struct{}
	b       Bindings
	root    string  // workspace root, "" for none
	anchor  string  // allowed directory the root was admitted under, "" for none
	trace   *Trace  // receives the file checks, when not nil
	checked [4]bool // bindings already found to be JSON within limits
	nodes   int     // syntax nodes evaluated
	concat  int     // bytes of strings built by '+' and str() so far
	// matchWork is the regex matching done so far (see MaxMatchWork).
	matchWork int

	// The work budget (budget.go): work is counted here and added to the
	// shared budget (nil for a private one) whenever it passes slack.
	budget *Budget
	work   int // units counted and not yet added to budget
	slack  int // units work may reach before the next flush
	total  int // units already added to budget
}

// checkEvery is how many nodes are evaluated between two checks of the
// context, and charged to the budget at once (a node is a unit of work; an
// evaluation has at most MaxNodes of them, so counting them in batches
// keeps the everyday ensure as fast as it was without a budget).
const checkEvery = 256

// checkpoint charges the last checkEvery nodes and checks the context.
func (ev *evaluator) checkpoint() *Error {
	if err := ev.charge(checkEvery); err != nil {
		return err
	}
	if ev.done != nil {
		return ev.cancelled()
	}
	return nil
}

func (ev *evaluator) cancelled() *Error {
	select {
	case <-ev.done:
		err := ev.ctx.Err()
		return &Error{Code: CodeResourceLimit, Message: "evaluation cancelled: " + err.Error(), Offset: -1, Err: err}
	default:
		return nil
	}
}

func (ev *evaluator) eval(n *node) (any, *Error) {
	ev.nodes++
	if ev.nodes%checkEvery == 0 {
		if err := ev.checkpoint(); err != nil {
			return nil, err
		}
	}
	switch n.op {
	case opLiteral:
		return n.val, nil
	case opIdent:
		return ev.identifier(n)
	case opMember:
		x, err := ev.eval(n.x)
		if err != nil {
			return nil, err
		}
		o, ok := x.(*Object)
		if !ok {
			return nil, typeErrorf(fmt.Sprintf("member access .%s needs an object, received %s", n.name, typeName(x)))
		}
		v, ok := o.Get(n.name)
		if !ok {
			return nil, typeErrorf(fmt.Sprintf("member %q does not exist", n.name))
		}
		return v, nil
	case opIndex:
		x, err := ev.eval(n.x)
		if err != nil {
			return nil, err
		}
		a, ok := x.([]any)
		if !ok {
			return nil, typeErrorf(fmt.Sprintf("index access [%s] needs an array, received %s", FormatNumber(n.index), typeName(x)))
		}
		if n.index >= float64(len(a)) {
			return nil, typeErrorf(fmt.Sprintf("array index %s is out of bounds (length %d)", FormatNumber(n.index), len(a)))
		}
		return a[int(n.index)], nil
	case opCall:
		return ev.call(n)
	case opNot:
		x, err := ev.eval(n.x)
		if err != nil {
			return nil, err
		}
		t, ok := x.(bool)
		if !ok {
			return nil, typeErrorf("operator ! needs a boolean, received " + typeName(x))
		}
		return !t, nil
	case opNeg:
		x, err := ev.eval(n.x)
		if err != nil {
			return nil, err
		}
		f, ok := x.(float64)
		if !ok {
			return nil, typeErrorf("unary - needs a number, received " + typeName(x))
		}
		return -f, nil
	case opAnd, opOr:
		return ev.logical(n)
	}
	return ev.binary(n)
}

func (ev *evaluator) identifier(n *node) (any, *Error) {
	if n.slot == bindNone {
		return nil, newError(CodeUnknownIdentifier, fmt.Sprintf("unknown identifier %q (only result, input, item and prev exist)", n.name))
	}
	b := ev.b.get(n.slot)
	switch b.state {
	case unbound:
		return nil, newError(CodeUnknownIdentifier, fmt.Sprintf("%s is not bound in this context", n.name))
	case boundAbsent:
		return nil, typeErrorf(fmt.Sprintf("%s has no value here (it is not a JSON value)", n.name))
	}
	if !ev.checked[n.slot] {
		var visited int
		if err := checkBinding(n.name, b.v, &visited); err != nil {
			return nil, err
		}
		if err := ev.charge(visited); err != nil {
			return nil, err
		}
		ev.checked[n.slot] = true
	}
	return b.v, nil
}

func (ev *evaluator) logical(n *node) (any, *Error) {
	x, err := ev.eval(n.x)
	if err != nil {
		return nil, err
	}
	op := opText[n.op]
	l, ok := x.(bool)
	if !ok {
		return nil, typeErrorf(fmt.Sprintf("left operand of %s must be a boolean, received %s", op, typeName(x)))
	}
	if (n.op == opAnd && !l) || (n.op == opOr && l) {
		return l, nil
	}
	y, err := ev.eval(n.y)
	if err != nil {
		return nil, err
	}
	r, ok := y.(bool)
	if !ok {
		return nil, typeErrorf(fmt.Sprintf("right operand of %s must be a boolean, received %s", op, typeName(y)))
	}
	return r, nil
}

func (ev *evaluator) binary(n *node) (any, *Error) {
	x, err := ev.eval(n.x)
	if err != nil {
		return nil, err
	}
	y, err := ev.eval(n.y)
	if err != nil {
		return nil, err
	}
	switch n.op {
	case opEq, opNe:
		eq, err := ev.equal(x, y)
		if err != nil {
			return nil, err
		}
		return eq == (n.op == opEq), nil
	case opLt, opLe, opGt, opGe:
		c, err := order(x, y, opText[n.op])
		if err != nil {
			return nil, err
		}
		if a, ok := x.(string); ok {
			if err := ev.charge(min(len(a), len(y.(string))) / bytesPerUnit); err != nil {
				return nil, err
			}
		}
		switch n.op {
		case opLt:
			return c < 0, nil
		case opLe:
			return c <= 0, nil
		case opGt:
			return c > 0, nil
		}
		return c >= 0, nil
	case opIn:
		return ev.contains(x, y)
	case opAdd:
		if a, ok := x.(float64); ok {
			if b, ok := y.(float64); ok {
				return finite(a+b, "+")
			}
		}
		if a, ok := x.(string); ok {
			if b, ok := y.(string); ok {
				if err := ev.built(len(a) + len(b)); err != nil {
					return nil, err
				}
				if err := ev.charge((len(a) + len(b)) / bytesPerUnit); err != nil {
					return nil, err
				}
				return a + b, nil
			}
		}
		return nil, typeErrorf(fmt.Sprintf("operator + needs two numbers or two strings, received %s and %s", typeName(x), typeName(y)))
	case opSub, opMul:
		op := opText[n.op]
		a, ok := x.(float64)
		if !ok {
			return nil, typeErrorf(fmt.Sprintf("left operand of %s must be a number, received %s", op, typeName(x)))
		}
		b, ok := y.(float64)
		if !ok {
			return nil, typeErrorf(fmt.Sprintf("right operand of %s must be a number, received %s", op, typeName(y)))
		}
		if n.op == opSub {
			return finite(a-b, op)
		}
		return finite(a*b, op)
	case opDiv:
		b, ok := y.(float64)
		if !ok {
			return nil, typeErrorf("right operand of / must be a number, received " + typeName(y))
		}
		if b == 0 {
			return nil, typeErrorf("division by zero")
		}
		a, ok := x.(float64)
		if !ok {
			return nil, typeErrorf("left operand of / must be a number, received " + typeName(x))
		}
		return finite(a/b, "/")
	}
	return nil, newError(CodeParse, fmt.Sprintf("unknown operator %d", n.op))
}

// built charges n bytes of a newly built string to MaxConcatBytes.
func (ev *evaluator) built(n int) *Error {
	ev.concat += n
	if ev.concat > MaxConcatBytes {
		return newError(CodeResourceLimit, fmt.Sprintf("the strings built by + and str() in this evaluation exceed %d bytes", MaxConcatBytes))
	}
	return nil
}

func finite(f float64, op string) (any, *Error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, typeErrorf(fmt.Sprintf("result of %s is not a finite number", op))
	}
	return f, nil
}

// order compares two numbers or two strings (by UTF-16 code units).
func order(x, y any, op string) (int, *Error) {
	switch a := x.(type) {
	case float64:
		if b, ok := y.(float64); ok {
			switch {
			case a < b:
				return -1, nil
			case a > b:
				return 1, nil
			}
			return 0, nil
		}
	case string:
		if b, ok := y.(string); ok {
			return compareStrings(a, b), nil
		}
	}
	return 0, typeErrorf(fmt.Sprintf("operator %s needs two numbers or two strings, received %s and %s", op, typeName(x), typeName(y)))
}

// equal is Equal, charged to the budget.
func (ev *evaluator) equal(x, y any) (bool, *Error) {
	var work int
	eq := deepEqual(x, y, &work)
	return eq, ev.charge(work)
}

// contains implements needle in haystack.
func (ev *evaluator) contains(needle, haystack any) (any, *Error) {
	switch h := haystack.(type) {
	case []any:
		var work int
		found := false
		for _, e := range h {
			if deepEqual(needle, e, &work) {
				found = true
				break
			}
		}
		return found, ev.charge(work)
	case string:
		s, ok := needle.(string)
		if !ok {
			return nil, typeErrorf("left operand of in must be a string when the right is a string, received " + typeName(needle))
		}
		if err := ev.charge(len(h) / bytesPerUnit); err != nil {
			return nil, err
		}
		return strings.Contains(h, s), nil
	case *Object:
		s, ok := needle.(string)
		if !ok {
			return nil, typeErrorf("left operand of in must be a string when the right is an object, received " + typeName(needle))
		}
		if blockedMember(s) {
			return nil, newError(CodeValidation, fmt.Sprintf("key %q is not allowed in a membership test", s))
		}
		_, ok = h.Get(s)
		return ok, nil
	}
	return nil, typeErrorf("right operand of in must be an array, string or object, received " + typeName(haystack))
}

// typeName names a value's JSON type for messages.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case *Object:
		return "object"
	}
	return fmt.Sprintf("%T (not a JSON value)", v)
}

// Truthy is the language's truthiness, used by bool(), any() and all():
// null and false are false; a number is true unless 0; a string, array or
// object is true unless empty. (The operators !, && and || and a step's
// `when` do not use it: they demand real booleans.)
func Truthy(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case float64:
		return v != 0
	case string:
		return v != ""
	case []any:
		return len(v) > 0
	case *Object:
		return v.Len() > 0
	}
	return false
}

// checkBinding verifies that a bound value is JSON of the model within
// MaxBindingDepth. Depth is tracked alone on the way down; only when it is
// exceeded is the value walked again to tell a cycle (a type_error) from
// plain depth. It adds the values it visits to *visited.
func checkBinding(name string, v any, visited *int) *Error {
	*visited++ // the value itself; containers add their elements
	err := checkValue(name, v, 0, visited)
	if err == errTooDeep {
		if hasCycle(v, map[any]bool{}) {
			return typeErrorf(fmt.Sprintf("binding %s contains a cycle", name))
		}
		return newError(CodeResourceLimit, fmt.Sprintf("binding %s nests deeper than %d levels", name, MaxBindingDepth))
	}
	return err
}

var errTooDeep = &Error{Code: CodeResourceLimit}

func checkValue(name string, v any, depth int, visited *int) *Error {
	if depth > MaxBindingDepth {
		return errTooDeep
	}
	switch v := v.(type) {
	case nil, bool, string:
		return nil
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return typeErrorf(fmt.Sprintf("binding %s contains a non-finite number", name))
		}
		return nil
	case []any:
		*visited += len(v)
		for _, e := range v {
			if err := checkValue(name, e, depth+1, visited); err != nil {
				return err
			}
		}
		return nil
	case *Object:
		if v == nil {
			return nil
		}
		*visited += len(v.vals)
		for _, e := range v.vals {
			if err := checkValue(name, e, depth+1, visited); err != nil {
				return err
			}
		}
		return nil
	}
	return typeErrorf(fmt.Sprintf("binding %s contains %T, which is not a JSON value", name, v))
}

// hasCycle reports whether a container is its own descendant. It is only
// called on values already known to be deeper than MaxBindingDepth.
func hasCycle(v any, onPath map[any]bool) bool {
	var key any
	switch c := v.(type) {
	case []any:
		if len(c) == 0 {
			return false
		}
		key = &c[0]
	case *Object:
		key = c
	default:
		return false
	}
	if onPath[key] {
		return true
	}
	onPath[key] = true
	defer delete(onPath, key)
	switch c := v.(type) {
	case []any:
		for _, e := range c {
			if hasCycle(e, onPath) {
				return true
			}
		}
	case *Object:
		for _, e := range c.vals {
			if hasCycle(e, onPath) {
				return true
			}
		}
	}
	return false
}
