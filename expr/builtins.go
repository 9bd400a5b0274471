package expr

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"

	"github.com/stratum-go/stratum/expr/internal/jsregex"
)

type builtinID uint8

const (
	fnLen builtinID = iota
	fnAny
	fnAll
	fnMax
	fnMin
	fnStr
	fnInt
	fnBool
	fnMatches
	fnFileExists
	fnFileContains
)

type builtin struct {
	id    builtinID
	name  string
	arity int
}

var builtins = map[string]*builtin{
	"len":           {fnLen, "len", 1},
	"any":           {fnAny, "any", 1},
	"all":           {fnAll, "all", 1},
	"max":           {fnMax, "max", 1},
	"min":           {fnMin, "min", 1},
	"str":           {fnStr, "str", 1},
	"int":           {fnInt, "int", 1},
	"bool":          {fnBool, "bool", 1},
	"matches":       {fnMatches, "matches", 2},
	"file_exists":   {fnFileExists, "file_exists", 1},
	"file_contains": {fnFileContains, "file_contains", 2},
}

// Regex bounds for matches(), in UTF-16 code units.
const (
	MaxPatternLength = 256
	MaxMatchInput    = 4096
)

// MaxMatchWork bounds the regex matching one evaluation may do, counted as
// the text's length plus compileWork, times the translated pattern's size,
// for every matches() call: about the steps of compiling the pattern and of
// Go's linear-time matcher. One call costs at most (4096+129) x 10,000
// units, so any single call fits, but an expression that repeats a large
// pattern hundreds of times (minutes of CPU) stops with a resource_limit.
// Measured on a 2-vCPU AMD EPYC, a unit takes 10-40 ns: a 4,096-state
// pattern over 4,096 characters is 0.6-1.3 s. The reference has no such
// bound. The same work is also charged to the evaluation's [Budget].
const MaxMatchWork = 1 << 26

func (ev *evaluator) call(n *node) (any, *Error) {
	// Arguments are evaluated, left to right, before the name is looked
	// at: upper(missing) is an unknown_identifier.
	var buf [2]any
	args := buf[:0]
	for _, a := range n.args {
		v, err := ev.eval(a)
		if err != nil {
			return nil, err
		}
		args = append(args, v)
	}
	f := n.fn
	if f == nil {
		return nil, newError(CodeUnknownFunction, fmt.Sprintf("unknown function %q", n.name))
	}
	if len(args) != f.arity {
		plural := "s"
		if f.arity == 1 {
			plural = ""
		}
		return nil, typeErrorf(fmt.Sprintf("%s expects %d argument%s, received %d", f.name, f.arity, plural, len(args)))
	}
	switch f.id {
	case fnLen:
		switch v := args[0].(type) {
		case string:
			if err := ev.charge(len(v) / bytesPerUnit); err != nil {
				return nil, err
			}
			return count(utf16Len(v)), nil
		case []any:
			return count(len(v)), nil
		case *Object:
			return count(v.Len()), nil
		}
		return nil, typeErrorf("len needs a string, array or object, received " + typeName(args[0]))
	case fnAny, fnAll:
		a, ok := args[0].([]any)
		if !ok {
			return nil, typeErrorf(fmt.Sprintf("%s needs an array, received %s", f.name, typeName(args[0])))
		}
		if err := ev.charge(len(a)); err != nil {
			return nil, err
		}
		want := f.id == fnAny
		for _, e := range a {
			if Truthy(e) == want {
				return want, nil
			}
		}
		return !want, nil
	case fnMax, fnMin:
		if a, ok := args[0].([]any); ok {
			work := len(a)
			for _, e := range a {
				if s, ok := e.(string); ok {
					work += len(s) / bytesPerUnit
				}
			}
			if err := ev.charge(work); err != nil {
				return nil, err
			}
		}
		return extreme(f, args[0])
	case fnStr:
		s := Stringify(args[0])
		switch args[0].(type) {
		case []any, *Object:
			if err := ev.built(len(s)); err != nil {
				return nil, err
			}
			if err := ev.charge(len(s) / bytesPerUnit); err != nil {
				return nil, err
			}
		}
		return s, nil
	case fnInt:
		if s, ok := args[0].(string); ok {
			if err := ev.charge(len(s) / bytesPerUnit); err != nil {
				return nil, err
			}
		}
		return toInt(args[0])
	case fnBool:
		return Truthy(args[0]), nil
	case fnMatches:
		return ev.matches(n, args[0], args[1])
	case fnFileExists, fnFileContains:
		if ev.root == "" {
			return nil, newError(CodeValidation, "file function requires a workspace root (file functions work only in ensure, iterate.until and fanout stage contexts)")
		}
		path, ok := args[0].(string)
		if !ok {
			return nil, typeErrorf(fmt.Sprintf("%s path must be a string, received %s", f.name, typeName(args[0])))
		}
		text := ""
		if f.id == fnFileContains {
			if text, ok = args[1].(string); !ok {
				return nil, typeErrorf("file_contains text must be a string, received " + typeName(args[1]))
			}
		}
		if err := ev.cancelled(); err != nil {
			return nil, err
		}
		if err := ev.charge(fileUnits + len(path)/bytesPerUnit); err != nil {
			return nil, err
		}
		var fc FileCheck
		if f.id == fnFileExists {
			fc = checkFileExists(jail{ev.root, ev.anchor}, path)
		} else {
			fc = checkFileContains(jail{ev.root, ev.anchor}, path, text, ev.charge)
		}
		if ev.trace != nil {
			ev.trace.record(fc)
		}
		return fc.Result, asError(fc.Err)
	}
	return nil, newError(CodeUnknownFunction, fmt.Sprintf("unknown function %q", n.name))
}

// smallCounts are the numbers 0..255 already boxed, so that len() of
// everyday values does not allocate. Read-only after initialisation.
var smallCounts = func() (t [256]any) {
	for i := range t {
		t[i] = float64(i)
	}
	return t
}()

func count(n int) any {
	if n < len(smallCounts) {
		return smallCounts[n]
	}
	return float64(n)
}

// asError converts an error of a file check, always an *Error.
func asError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeValidation, Message: err.Error(), Offset: -1, Err: err}
}

// extreme implements max() and min(): a non-empty array of only numbers or
// only strings.
func extreme(f *builtin, arg any) (any, *Error) {
	a, ok := arg.([]any)
	if !ok {
		return nil, typeErrorf(fmt.Sprintf("%s needs an array, received %s", f.name, typeName(arg)))
	}
	if len(a) == 0 {
		return nil, typeErrorf(f.name + " needs a non-empty array")
	}
	isMax := f.id == fnMax
	mixed := typeErrorf(fmt.Sprintf("%s needs an array of only numbers or only strings", f.name))
	switch first := a[0].(type) {
	case float64:
		best := first
		for _, e := range a[1:] {
			v, ok := e.(float64)
			if !ok {
				return nil, mixed
			}
			// math.Max and math.Min order -0 below +0, as Math.max does.
			if isMax {
				best = math.Max(best, v)
			} else {
				best = math.Min(best, v)
			}
		}
		return best, nil
	case string:
		best := first
		for _, e := range a[1:] {
			v, ok := e.(string)
			if !ok {
				return nil, mixed
			}
			c := compareStrings(v, best)
			if (isMax && c > 0) || (!isMax && c < 0) {
				best = v
			}
		}
		return best, nil
	}
	return nil, mixed
}

// toInt implements int(): booleans to 0 or 1, numbers truncated toward
// zero, strings of optionally signed ASCII digits parsed in base 10.
func toInt(v any) (any, *Error) {
	switch v := v.(type) {
	case bool:
		if v {
			return 1.0, nil
		}
		return 0.0, nil
	case float64:
		return math.Trunc(v), nil
	case string:
		digits := v
		if len(digits) > 0 && (digits[0] == '+' || digits[0] == '-') {
			digits = digits[1:]
		}
		if digits == "" {
			break
		}
		for i := 0; i < len(digits); i++ {
			if digits[i] < '0' || digits[i] > '9' {
				return nil, typeErrorf(fmt.Sprintf("int needs a boolean, a number or a string of ASCII digits, received %q", v))
			}
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, typeErrorf(fmt.Sprintf("int(%q) is not a finite number", v))
		}
		return f, nil
	}
	return nil, typeErrorf("int needs a boolean, a number or a string of ASCII digits, received " + typeName(v))
}

// patternCache is a matches() pattern, checked and compiled on first use
// and then kept. A literal pattern gets one in the syntax tree (shared by
// concurrent evaluations, hence the sync.Once); compiling lazily means an
// expression with many large literal patterns costs only for those an
// evaluation reaches, and those are charged to its regex work budget.
type patternCache struct {
	pattern string
	units   int // length in UTF-16 code units
	once    sync.Once
	err     *Error // why the pattern is refused, or nil
	re      *jsregex.Regexp
}

func newPattern(pattern string) *patternCache {
	return &patternCache{pattern: pattern, units: utf16Len(pattern)}
}

// compiled returns the regexp, compiling it on first use. The length limit
// is checked by the caller first.
func (pc *patternCache) compiled() (*jsregex.Regexp, *Error) {
	pc.once.Do(pc.compile)
	return pc.re, pc.err
}

func (pc *patternCache) compile() {
	if err := jsregex.Shape(pc.pattern); err != nil {
		pc.err = newError(CodeValidation, err.Error())
		return
	}
	re, err := jsregex.Compile(pc.pattern, MaxMatchInput)
	if err != nil {
		code := CodeValidation
		var tl *jsregex.TooLargeError
		if errors.As(err, &tl) {
			code = CodeResourceLimit
		}
		pc.err = &Error{Code: code, Message: err.Error(), Offset: -1, Err: err}
		return
	}
	pc.re = re
}

// compileWork is what one matches() call is charged per pattern state on
// top of the text: about what compiling the pattern costs, so that many
// large patterns over short texts are bounded too.
const compileWork = 128

func (ev *evaluator) matches(n *node, textArg, patternArg any) (any, *Error) {
	text, ok := textArg.(string)
	if !ok {
		return nil, typeErrorf("matches text must be a string, received " + typeName(textArg))
	}
	pattern, ok := patternArg.(string)
	if !ok {
		return nil, typeErrorf("matches pattern must be a string, received " + typeName(patternArg))
	}
	// A UTF-16 unit takes at most three bytes of UTF-8, so a string of
	// more than three bytes per allowed unit is refused without scanning
	// it (or hashing it for the cache).
	pc, fresh := n.re, false
	if pc == nil && len(pattern) <= 3*MaxPatternLength {
		if pc = dynamicPatterns.lookup(pattern); pc == nil {
			pc, fresh = newPattern(pattern), true
		}
	}
	if pc == nil || pc.units > MaxPatternLength {
		return nil, newError(CodeResourceLimit, fmt.Sprintf("regex pattern is longer than %d characters", MaxPatternLength))
	}
	textUnits := MaxMatchInput + 1
	if len(text) <= 3*MaxMatchInput {
		textUnits = utf16Len(text)
	}
	if textUnits > MaxMatchInput {
		return nil, newError(CodeResourceLimit, fmt.Sprintf("matches text is longer than %d characters", MaxMatchInput))
	}
	re, err := pc.compiled()
	if fresh {
		dynamicPatterns.add(pc)
	}
	if err != nil {
		return nil, err
	}
	// Charged whether or not the pattern was compiled before (by another
	// evaluation, or found in the cache), so that the verdict never
	// depends on what ran earlier.
	work := (textUnits + 1 + compileWork) * re.States
	ev.matchWork += work
	if ev.matchWork > MaxMatchWork {
		return nil, newError(CodeResourceLimit, fmt.Sprintf("the matches() calls of this evaluation exceed the regex work budget (%d: text length plus %d, times pattern size, summed)", MaxMatchWork, compileWork))
	}
	if err := ev.charge(work); err != nil {
		return nil, err
	}
	if err := ev.cancelled(); err != nil {
		return nil, err
	}
	return re.MatchString(text), nil
}
