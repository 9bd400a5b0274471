package jsregex

import (
	"fmt"
	"unicode"
)

// Unicode property escapes (\p{...}, \P{...}). The property data is Go's
// unicode package (its Unicode version may differ slightly from the one
// Node.js ships). ECMAScript names that Go has no table for are refused
// with an explicit error rather than approximated.

// generalCategory maps every ECMAScript spelling of a General_Category
// value to Go's short name.
var generalCategory = map[string]string{
	"C": "C", "Other": "C",
	"Cc": "Cc", "Control": "Cc", "cntrl": "Cc",
	"Cf": "Cf", "Format": "Cf",
	"Cn": "Cn", "Unassigned": "Cn",
	"Co": "Co", "Private_Use": "Co",
	"Cs": "Cs", "Surrogate": "Cs",
	"L": "L", "Letter": "L",
	"LC": "LC", "Cased_Letter": "LC",
	"Ll": "Ll", "Lowercase_Letter": "Ll",
	"Lm": "Lm", "Modifier_Letter": "Lm",
	"Lo": "Lo", "Other_Letter": "Lo",
	"Lt": "Lt", "Titlecase_Letter": "Lt",
	"Lu": "Lu", "Uppercase_Letter": "Lu",
	"M": "M", "Mark": "M", "Combining_Mark": "M",
	"Mc": "Mc", "Spacing_Mark": "Mc",
	"Me": "Me", "Enclosing_Mark": "Me",
	"Mn": "Mn", "Nonspacing_Mark": "Mn",
	"N": "N", "Number": "N",
	"Nd": "Nd", "Decimal_Number": "Nd", "digit": "Nd",
	"Nl": "Nl", "Letter_Number": "Nl",
	"No": "No", "Other_Number": "No",
	"P": "P", "Punctuation": "P", "punct": "P",
	"Pc": "Pc", "Connector_Punctuation": "Pc",
	"Pd": "Pd", "Dash_Punctuation": "Pd",
	"Pe": "Pe", "Close_Punctuation": "Pe",
	"Pf": "Pf", "Final_Punctuation": "Pf",
	"Pi": "Pi", "Initial_Punctuation": "Pi",
	"Po": "Po", "Other_Punctuation": "Po",
	"Ps": "Ps", "Open_Punctuation": "Ps",
	"S": "S", "Symbol": "S",
	"Sc": "Sc", "Currency_Symbol": "Sc",
	"Sk": "Sk", "Modifier_Symbol": "Sk",
	"Sm": "Sm", "Math_Symbol": "Sm",
	"So": "So", "Other_Symbol": "So",
	"Z": "Z", "Separator": "Z",
	"Zl": "Zl", "Line_Separator": "Zl",
	"Zp": "Zp", "Paragraph_Separator": "Zp",
	"Zs": "Zs", "Space_Separator": "Zs",
}

// binaryFromGo maps ECMAScript binary property names (long and short) to
// the name of Go's table.
var binaryFromGo = map[string]string{
	"ASCII_Hex_Digit": "ASCII_Hex_Digit", "AHex": "ASCII_Hex_Digit",
	"Bidi_Control": "Bidi_Control", "Bidi_C": "Bidi_Control",
	"Dash":       "Dash",
	"Deprecated": "Deprecated", "Dep": "Deprecated",
	"Diacritic": "Diacritic", "Dia": "Diacritic",
	"Extender": "Extender", "Ext": "Extender",
	"Hex_Digit": "Hex_Digit", "Hex": "Hex_Digit",
	"IDS_Binary_Operator": "IDS_Binary_Operator", "IDSB": "IDS_Binary_Operator",
	"IDS_Trinary_Operator": "IDS_Trinary_Operator", "IDST": "IDS_Trinary_Operator",
	"Ideographic": "Ideographic", "Ideo": "Ideographic",
	"Join_Control": "Join_Control", "Join_C": "Join_Control",
	"Logical_Order_Exception": "Logical_Order_Exception", "LOE": "Logical_Order_Exception",
	"Noncharacter_Code_Point": "Noncharacter_Code_Point", "NChar": "Noncharacter_Code_Point",
	"Pattern_Syntax": "Pattern_Syntax", "Pat_Syn": "Pattern_Syntax",
	"Pattern_White_Space": "Pattern_White_Space", "Pat_WS": "Pattern_White_Space",
	"Quotation_Mark": "Quotation_Mark", "QMark": "Quotation_Mark",
	"Radical":            "Radical",
	"Regional_Indicator": "Regional_Indicator", "RI": "Regional_Indicator",
	"Sentence_Terminal": "Sentence_Terminal", "STerm": "Sentence_Terminal",
	"Soft_Dotted": "Soft_Dotted", "SD": "Soft_Dotted",
	"Terminal_Punctuation": "Terminal_Punctuation", "Term": "Terminal_Punctuation",
	"Unified_Ideograph": "Unified_Ideograph", "UIdeo": "Unified_Ideograph",
	"Variation_Selector": "Variation_Selector", "VS": "Variation_Selector",
	"White_Space": "White_Space", "space": "White_Space",
}

// binaryUnsupported lists ECMAScript binary properties that are valid in
// JavaScript but have no table in Go.
var binaryUnsupported = map[string]bool{
	"Bidi_Mirrored": true, "Bidi_M": true, "Case_Ignorable": true, "CI": true, "Cased": true,
	"Changes_When_Casefolded": true, "CWCF": true, "Changes_When_Casemapped": true, "CWCM": true,
	"Changes_When_Lowercased": true, "CWL": true, "Changes_When_NFKC_Casefolded": true, "CWKCF": true,
	"Changes_When_Titlecased": true, "CWT": true, "Changes_When_Uppercased": true, "CWU": true,
	"Default_Ignorable_Code_Point": true, "DI": true, "Emoji": true, "Emoji_Component": true,
	"EComp": true, "Emoji_Modifier": true, "EMod": true, "Emoji_Modifier_Base": true, "EBase": true,
	"Emoji_Presentation": true, "EPres": true, "Extended_Pictographic": true, "ExtPict": true,
	"Grapheme_Base": true, "Gr_Base": true, "Grapheme_Extend": true, "Gr_Ext": true,
	"ID_Continue": true, "IDC": true, "ID_Start": true, "IDS": true,
	"XID_Continue": true, "XIDC": true, "XID_Start": true, "XIDS": true,
	"Script_Extensions": true, "scx": true,
}

// propertySet resolves the body of \p{...}.
func propertySet(body string) (set, error) {
	name, value, hasValue := cut(body, '=')
	if hasValue {
		switch name {
		case "General_Category", "gc":
			if short, ok := generalCategory[value]; ok {
				return categorySet(short), nil
			}
		case "Script", "sc":
			if t, ok := unicode.Scripts[value]; ok {
				return fromTable(t), nil
			}
			return nil, &UnsupportedError{fmt.Sprintf("script %q (only long script names such as Latin or Greek are known here)", value)}
		case "Script_Extensions", "scx":
			return nil, &UnsupportedError{"Script_Extensions"}
		}
		return nil, syntaxErrorf("invalid Unicode property \\p{%s}", body)
	}
	if short, ok := generalCategory[body]; ok {
		return categorySet(short), nil
	}
	if goName, ok := binaryFromGo[body]; ok {
		return fromTable(unicode.Properties[goName]), nil
	}
	switch body {
	case "Any":
		return set{{0, maxRune}}, nil
	case "ASCII":
		return set{{0, 0x7F}}, nil
	case "Assigned":
		return complement(categorySet("Cn")), nil
	case "Alphabetic", "Alpha":
		return fromTables(unicode.Lu, unicode.Ll, unicode.Lt, unicode.Lm, unicode.Lo, unicode.Nl, unicode.Other_Alphabetic), nil
	case "Lowercase", "Lower":
		return fromTables(unicode.Ll, unicode.Other_Lowercase), nil
	case "Uppercase", "Upper":
		return fromTables(unicode.Lu, unicode.Other_Uppercase), nil
	case "Math":
		return fromTables(unicode.Sm, unicode.Other_Math), nil
	}
	if binaryUnsupported[body] {
		return nil, &UnsupportedError{fmt.Sprintf("Unicode property %s", body)}
	}
	return nil, syntaxErrorf("invalid Unicode property \\p{%s}", body)
}

// categorySet builds a General_Category set. C and Cn are computed, because
// ECMAScript's Other includes the unassigned code points.
func categorySet(short string) set {
	switch short {
	case "Cn":
		var assigned set
		for _, k := range []string{"L", "M", "N", "P", "S", "Z", "Cc", "Cf", "Co", "Cs"} {
			assigned = union(assigned, fromTable(unicode.Categories[k]))
		}
		return complement(assigned)
	case "C":
		return union(fromTables(unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs), categorySet("Cn"))
	}
	return fromTable(unicode.Categories[short])
}

func cut(s string, sep byte) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
