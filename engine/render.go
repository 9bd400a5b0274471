package engine

import (
	"fmt"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/ir"
)

// stageCtx binds ${item} and ${prev} while rendering a fanout stage.
type stageCtx struct {
	item    any
	prev    any
	hasPrev bool
}

// resolver resolves references in a scope (docs/spec-language.md, "At run
// time").
func (t *txn) resolver(sc *scope, sx *stageCtx) ir.Resolver {
	return func(r *ir.Ref) (any, error) {
		switch r.Kind {
		case ir.RefInput:
			v, ok := r.Lookup(sc.input)
			if !ok {
				return nil, fmt.Errorf("reference %s is unavailable: the input has no such value", r.Text)
			}
			return v, nil
		case ir.RefStep:
			st := sc.peekID(r.Name)
			if st == nil || st.Status != StepSucceeded || !st.Output.Present {
				return nil, fmt.Errorf("reference output is unavailable (the source may have been skipped): %s", r.Text)
			}
			v, ok := r.Lookup(st.Output.Data)
			if !ok {
				return nil, fmt.Errorf("reference output is unavailable: %s has no such value", r.Text)
			}
			return v, nil
		case ir.RefCarry:
			ce := t.st.Carry[r.Name]
			if ce == nil {
				return nil, fmt.Errorf("carry variable %q is not materialised", r.Name)
			}
			v, ok := r.Lookup(ce.Value.Data)
			if !ok {
				return nil, fmt.Errorf("reference %s is unavailable: carry variable %q has no such value", r.Text, r.Name)
			}
			return v, nil
		case ir.RefItem:
			if sx == nil {
				return nil, fmt.Errorf("reference %s is only available in fanout stages", r.Text)
			}
			return sx.item, nil
		case ir.RefPrev:
			if sx == nil || !sx.hasPrev {
				return nil, fmt.Errorf("reference %s is unavailable: there is no previous stage output", r.Text)
			}
			return sx.prev, nil
		}
		return nil, fmt.Errorf("reference %s has an unknown kind", r.Text)
	}
}

// renderDo renders a task text: a full-value reference must be a string.
func (t *txn) renderDo(sc *scope, tpl *ir.Template, sx *stageCtx) (string, error) {
	if tpl == nil {
		return "", nil
	}
	v, err := tpl.Render(t.resolver(sc, sx))
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("do task must render to a string (%s is %s)", tpl.Text, typeName(v))
	}
	return s, nil
}

// renderValue renders a with mapping leaf by leaf: full-value references
// keep their JSON type, mixed text becomes a string.
func (t *txn) renderValue(sc *scope, v *ir.Value) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch v.Kind {
	case ir.ValueNull:
		return nil, nil
	case ir.ValueBool:
		return v.Bool, nil
	case ir.ValueNumber:
		return v.Number, nil
	case ir.ValueString:
		return v.String.Render(t.resolver(sc, nil))
	case ir.ValueList:
		out := make([]any, 0, len(v.Items))
		for _, it := range v.Items {
			x, err := t.renderValue(sc, it)
			if err != nil {
				return nil, err
			}
			out = append(out, x)
		}
		return out, nil
	case ir.ValueObject:
		o := expr.NewObject(len(v.Keys))
		for i, k := range v.Keys {
			x, err := t.renderValue(sc, v.Fields[i])
			if err != nil {
				return nil, err
			}
			o.Set(k, x)
		}
		return o, nil
	}
	return nil, fmt.Errorf("unknown value kind %d", v.Kind)
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case *expr.Object:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// contractMessage formats contract violations as one reason.
func contractMessage(name string, errs []ir.ValueError) string {
	msg := fmt.Sprintf("output failed the %s contract:", name)
	for i, e := range errs {
		if i > 0 {
			msg += ";"
		}
		msg += " " + e.Path + ": " + e.Message
	}
	return msg
}
