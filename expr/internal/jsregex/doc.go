// Package jsregex implements the regular-expression dialect of the v1
// expression language's matches(): JavaScript regular expressions with the
// u (Unicode) flag, behind the reference's conservative shape filter
// (docs/expressions.md, "matches").
//
// Shape applies the filter. Compile checks a pattern against the
// ECMAScript u-mode grammar, which is stricter than RE2's (a lone '}' or
// ']', an identity escape such as \a, a quantified assertion are syntax
// errors), and translates it into an equivalent Go regexp: '.' excludes all
// four JavaScript line terminators, \s is JavaScript's whitespace set, ^ and
// $ anchor at the ends of the text, classes are written out as explicit code
// point ranges. Only whether a match exists is ever asked, so capture groups
// become non-capturing and laziness is dropped (neither changes the set of
// matching texts). The filter keeps backreferences and lookaround out, which
// is what makes the translation to RE2 possible at all.
//
// It imports only the standard library.
package jsregex
