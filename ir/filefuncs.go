package ir

import "github.com/stratum-go/stratum/expr"

// usesFileFunctions reports whether an expression calls file_exists or
// file_contains anywhere (spec/ir.md 8.6). An expression that does not
// parse counts as calling neither, as in the reference: the rule only
// inspects expressions, it does not validate them (a broken expression
// fails at run time).
func usesFileFunctions(src string) bool {
	p, err := expr.Compile(src)
	return err == nil && p.UsesFileFunctions()
}
