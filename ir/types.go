package ir

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/stratum-go/stratum/expr"
)

// TypeKind is the kind of a contract field type.
type TypeKind uint8

// The type kinds of the contract type language (docs/spec-language.md, "Contracts and types").
const (
	TypeString   TypeKind = iota + 1 // "string": a JSON string
	TypeInteger                      // "integer": a number with an integral value
	TypeNumber                       // "number": any finite JSON number
	TypeBoolean                      // "boolean"
	TypeObject                       // "object": any JSON object, values unchecked
	TypeArray                        // "array": any JSON array, elements unchecked
	TypeEnum                         // "a|b" or the element of "(a|b)[]": one of Enum
	TypeList                         // "T[]": a JSON array whose elements satisfy Elem
	TypeContract                     // "Name": an object satisfying Contract
)

// Type is a resolved field type. Types are immutable once compiled.
type Type struct {
	Kind TypeKind
	// Optional is set by a trailing "?": the value may also be null or absent.
	Optional bool
	// Enum lists the accepted strings of a TypeEnum, in declaration order.
	Enum []string
	// Elem is the element type of a TypeList.
	Elem *Type
	// Contract is the contract of a TypeContract (resolved after parsing).
	Contract *Contract
	// Name is the referenced contract name of a TypeContract.
	Name string
	// Source is the type string this type was parsed from.
	Source string

	loose bool // failed to parse or resolve (only in specs with diagnostics)
}

// String returns the type string the type was declared with.
func (t *Type) String() string { return t.Source }

// Field is one declared field of a contract or flow input.
type Field struct {
	Name string
	Type *Type
}

// Contract is a named object shape (or, with an empty Name, a flow's input
// declaration). Its validator is strict: undeclared keys are rejected,
// non-optional fields must be present and not null.
type Contract struct {
	Name   string
	Fields []Field
	index  map[string]int
}

// Field returns the declared field called name.
func (c *Contract) Field(name string) (Field, bool) {
	if c == nil {
		return Field{}, false
	}
	if c.index != nil {
		i, ok := c.index[name]
		if !ok {
			return Field{}, false
		}
		return c.Fields[i], true
	}
	for _, f := range c.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// ValueError is one way a JSON value fails a type.
type ValueError struct {
	// Path locates the offending value: "input.people[0].name".
	Path string `json:"path"`
	// Message says what was expected and what was found.
	Message string `json:"message"`
}

func (e ValueError) Error() string {
	if e.Path == "" {
		return e.Message
	}
	return e.Path + ": " + e.Message
}

// maxValueErrors bounds how many problems one validation reports.
const maxValueErrors = 100

// Validate checks a JSON value in the expr value model (nil, bool,
// float64, string, []any, *expr.Object; map[string]any is accepted too, its
// keys visited in sorted order) against the contract. root names the value
// in error paths ("input", "result"); every problem is reported, up to a
// bound. A nil result means the value is valid.
func (c *Contract) Validate(v any, root string) []ValueError {
	var errs []ValueError
	validateObject(c, v, root, &errs)
	return errs
}

// Validate checks a JSON value against the type (see Contract.Validate).
// Optional types accept nil.
func (t *Type) Validate(v any, root string) []ValueError {
	var errs []ValueError
	validateType(t, v, root, &errs)
	return errs
}

func addValueError(errs *[]ValueError, path, format string, args ...any) {
	if len(*errs) >= maxValueErrors {
		return
	}
	*errs = append(*errs, ValueError{Path: path, Message: fmt.Sprintf(format, args...)})
}

func validateType(t *Type, v any, path string, errs *[]ValueError) {
	if v == nil {
		if !t.Optional {
			addValueError(errs, path, "expected %s, got null", describeType(t))
		}
		return
	}
	switch t.Kind {
	case TypeString:
		if _, ok := v.(string); !ok {
			addValueError(errs, path, "expected a string, got %s", describeValue(v))
		}
	case TypeNumber, TypeInteger:
		f, ok := toNumber(v)
		if !ok {
			addValueError(errs, path, "expected %s, got %s", describeType(t), describeValue(v))
			return
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			addValueError(errs, path, "expected a finite number, got %v", f)
			return
		}
		if t.Kind == TypeInteger && f != math.Trunc(f) {
			addValueError(errs, path, "expected an integer, got %v", f)
		}
	case TypeBoolean:
		if _, ok := v.(bool); !ok {
			addValueError(errs, path, "expected a boolean, got %s", describeValue(v))
		}
	case TypeObject:
		if !isObject(v) {
			addValueError(errs, path, "expected an object, got %s", describeValue(v))
		}
	case TypeArray:
		if _, ok := v.([]any); !ok {
			addValueError(errs, path, "expected an array, got %s", describeValue(v))
		}
	case TypeEnum:
		s, ok := v.(string)
		if !ok {
			addValueError(errs, path, "expected one of %s, got %s", quoteList(t.Enum), describeValue(v))
			return
		}
		for _, m := range t.Enum {
			if m == s {
				return
			}
		}
		addValueError(errs, path, "expected one of %s, got %q", quoteList(t.Enum), s)
	case TypeList:
		arr, ok := v.([]any)
		if !ok {
			addValueError(errs, path, "expected an array (%s), got %s", t.Source, describeValue(v))
			return
		}
		for i, e := range arr {
			validateType(t.Elem, e, indexPath(path, i), errs)
			if len(*errs) >= maxValueErrors {
				return
			}
		}
	case TypeContract:
		validateObject(t.Contract, v, path, errs)
	default:
		addValueError(errs, path, "unresolved type %q", t.Source)
	}
}

func validateObject(c *Contract, v any, path string, errs *[]ValueError) {
	if c == nil {
		addValueError(errs, path, "unresolved contract")
		return
	}
	name := "an object"
	if c.Name != "" {
		name = "an object (contract " + c.Name + ")"
	}
	switch o := v.(type) {
	case *expr.Object:
		if o == nil {
			addValueError(errs, path, "expected %s, got null", name)
			return
		}
		for _, k := range o.Keys() {
			if _, ok := c.Field(k); !ok {
				addValueError(errs, joinPath(path, k), "field %q is not declared%s; remove it (declared: %s)", k, contractSuffix(c), fieldList(c))
			}
		}
		for _, f := range c.Fields {
			fv, present := o.Get(f.Name)
			checkField(f, fv, present, joinPath(path, f.Name), errs)
		}
	case map[string]any:
		keys := sortedKeys(o)
		for _, k := range keys {
			if _, ok := c.Field(k); !ok {
				addValueError(errs, joinPath(path, k), "field %q is not declared%s; remove it (declared: %s)", k, contractSuffix(c), fieldList(c))
			}
		}
		for _, f := range c.Fields {
			fv, present := o[f.Name]
			checkField(f, fv, present, joinPath(path, f.Name), errs)
		}
	default:
		if v == nil {
			addValueError(errs, path, "expected %s, got null", name)
			return
		}
		addValueError(errs, path, "expected %s, got %s", name, describeValue(v))
	}
}

func checkField(f Field, v any, present bool, path string, errs *[]ValueError) {
	if !present {
		if !f.Type.Optional {
			addValueError(errs, path, "required field is missing (%s)", describeType(f.Type))
		}
		return
	}
	validateType(f.Type, v, path, errs)
}

func contractSuffix(c *Contract) string {
	if c.Name == "" {
		return ""
	}
	return " in contract " + c.Name
}

func fieldList(c *Contract) string {
	if len(c.Fields) == 0 {
		return "none"
	}
	return listNames(len(c.Fields), func(i int) string { return c.Fields[i].Name })
}

func toNumber(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	}
	return 0, false
}

func isObject(v any) bool {
	switch o := v.(type) {
	case *expr.Object:
		return o != nil
	case map[string]any:
		return true
	}
	return false
}

func describeType(t *Type) string {
	switch t.Kind {
	case TypeString:
		return "a string"
	case TypeInteger:
		return "an integer"
	case TypeNumber:
		return "a number"
	case TypeBoolean:
		return "a boolean"
	case TypeObject:
		return "an object"
	case TypeArray:
		return "an array"
	case TypeEnum:
		return "one of " + quoteList(t.Enum)
	case TypeList:
		return "an array (" + strings.TrimSuffix(t.Source, "?") + ")"
	case TypeContract:
		return "an object (contract " + t.Name + ")"
	}
	return t.Source
}

func describeValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return fmt.Sprintf("the boolean %v", x)
	case float64, int, int64:
		return fmt.Sprintf("the number %v", x)
	case string:
		if len(x) > 40 {
			return fmt.Sprintf("the string %q...", x[:40])
		}
		return fmt.Sprintf("the string %q", x)
	case []any:
		return "an array"
	case *expr.Object, map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a %T (not a JSON value)", v)
}

func quoteList(items []string) string {
	return listNames(len(items), func(i int) string { return strconv.Quote(items[i]) })
}

// parseType parses a type string (docs/spec-language.md, "Contracts and types"). It returns nil
// and a reason when the string is not a valid type.
// Type strings are not trimmed: " string" is invalid, but spaces are
// ordinary characters of enum members, so " a|b" is the enum of " a" and
// "b", as in the reference.
func parseType(s string) (*Type, string) {
	t, why := parseTypeInner(s)
	if t != nil {
		t.Source = s
		return t, ""
	}
	if trimmed := strings.TrimSpace(s); trimmed != s {
		if tt, _ := parseTypeInner(trimmed); tt != nil {
			return nil, "remove the surrounding spaces (write \"" + trimmed + "\")"
		}
	}
	return nil, why
}

func parseTypeInner(s string) (*Type, string) {
	optional := false
	if strings.HasSuffix(s, "?") {
		s = s[:len(s)-1]
		optional = true
		if s == "" || strings.HasSuffix(s, "?") {
			return nil, "a type takes at most one trailing \"?\" after a non-empty type"
		}
	}
	t, why := parseBareType(s)
	if t == nil {
		return nil, why
	}
	t.Optional = optional
	return t, ""
}

func parseBareType(s string) (*Type, string) {
	// Enum array: "(" body ")[]" with no parentheses in body.
	if strings.HasPrefix(s, "(") && strings.HasSuffix(s, ")[]") {
		body := s[1 : len(s)-3]
		if !strings.ContainsAny(body, "()") {
			members := strings.Split(body, "|")
			for _, m := range members {
				if m == "" {
					return nil, "an enum member is empty; write (a|b)[] with non-empty members"
				}
			}
			return &Type{Kind: TypeList, Elem: &Type{Kind: TypeEnum, Enum: members, Source: "(" + body + ")"}}, ""
		}
	}
	if strings.HasSuffix(s, "[]") {
		inner := s[:len(s)-2]
		if inner == "" {
			return nil, "\"[]\" needs an element type before it, as in string[]"
		}
		if strings.HasSuffix(inner, "?") {
			return nil, "array elements cannot be optional; make the field optional instead (string[]?)"
		}
		elem, why := parseBareType(inner)
		if elem == nil {
			return nil, why
		}
		elem.Source = inner
		return &Type{Kind: TypeList, Elem: elem}, ""
	}
	switch s {
	case "object":
		return &Type{Kind: TypeObject}, ""
	case "array":
		return &Type{Kind: TypeArray}, ""
	case "string":
		return &Type{Kind: TypeString}, ""
	case "integer":
		return &Type{Kind: TypeInteger}, ""
	case "number":
		return &Type{Kind: TypeNumber}, ""
	case "boolean":
		return &Type{Kind: TypeBoolean}, ""
	}
	if strings.Contains(s, "|") {
		members := strings.Split(s, "|")
		for _, m := range members {
			if m == "" {
				return nil, "an enum member is empty; write a|b with non-empty members"
			}
			if strings.ContainsAny(m, "[]()") {
				return nil, "enum members cannot contain brackets or parentheses; an array of an enum is written (a|b)[]"
			}
		}
		return &Type{Kind: TypeEnum, Enum: members}, ""
	}
	if isContractRefName(s) {
		return &Type{Kind: TypeContract, Name: s}, ""
	}
	return nil, "expected string, integer, number, boolean, object, array, an enum a|b, a contract name starting with a capital letter, T[] or T?"
}

func isContractRefName(s string) bool {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isFieldChar(s[i]) {
			return false
		}
	}
	return true
}

// isName matches ^[A-Za-z_][A-Za-z0-9_]*$ (contract and field names).
func isName(s string) bool {
	if s == "" {
		return false
	}
	c := s[0]
	if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isFieldChar(s[i]) {
			return false
		}
	}
	return true
}

func isFieldChar(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// isStepID matches ^[a-z][a-z0-9_-]*$.
func isStepID(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	return stepIDTail(s, 1) == len(s)
}

// stepIDTail returns the end of the run of [a-z0-9_-] starting at i.
func stepIDTail(s string, i int) int {
	for i < len(s) {
		c := s[i]
		if c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			i++
			continue
		}
		break
	}
	return i
}

func isReserved(name string) bool {
	return name == "__proto__" || name == "constructor" || name == "prototype"
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
