package ir

import (
	"strings"
)

// This file checks one step mapping: its fields, each by its own function,
// then the construct rules (exactly one construct, only the fields it
// takes). docs/spec-language.md ("Steps", and "How validation proceeds"
// for the order) describes the rules.

// stepField is one field a step mapping may have.
type stepField struct {
	name string
	// construct is the kind a step is when it has this key (do, set,
	// gate, fanout, run, evaluate); 0 for the other fields.
	construct StepKind
	// takenBy lists the constructs that take the field besides their own
	// key (every construct for id, after and when).
	takenBy kindSet
	// required: the check also runs when the field is absent.
	required bool
	// check validates the value (nil when the field is absent) into the
	// step being built.
	check func(b *stepBuilder, val *node)
}

// stepFieldTable is the one list of step fields. Its order is the order in
// which the fields of a step are checked (the reference's declaration
// order); the lookup by name, the field lists of messages and the
// constructs are all derived from it (stepFieldLookup).
var stepFieldTable = [...]stepField{
	{name: "id", takenBy: allKinds, required: true, check: (*stepBuilder).id},
	{name: "after", takenBy: allKinds, check: (*stepBuilder).after},
	{name: "when", takenBy: allKinds, check: (*stepBuilder).when},
	{name: "do", construct: KindDo, check: (*stepBuilder).do},
	{name: "set", construct: KindSet, check: (*stepBuilder).set},
	{name: "agent", takenBy: kinds(KindDo), check: (*stepBuilder).agent},
	{name: "out", takenBy: kinds(KindDo, KindSet, KindEvaluate), check: (*stepBuilder).out},
	{name: "ensure", takenBy: kinds(KindDo, KindSet), check: (*stepBuilder).ensure},
	{name: "attempts", takenBy: kinds(KindDo, KindFanout), check: (*stepBuilder).attempts},
	{name: "iterate", takenBy: kinds(KindDo), check: (*stepBuilder).iterate},
	{name: "budget", takenBy: kinds(KindDo, KindFanout, KindRun), check: (*stepBuilder).budget},
	{name: "on_fail", takenBy: kinds(KindDo, KindFanout, KindRun), check: (*stepBuilder).onFail},
	{name: "gate", construct: KindGate, check: (*stepBuilder).gate},
	{name: "fanout", construct: KindFanout, check: (*stepBuilder).fanout},
	{name: "run", construct: KindRun, check: (*stepBuilder).run},
	{name: "with", takenBy: kinds(KindRun), check: (*stepBuilder).with},
	{name: "evaluate", construct: KindEvaluate, check: (*stepBuilder).evaluate},
	{name: "idempotent", takenBy: kinds(KindDo), check: (*stepBuilder).idempotent},
}

// numStepFields is len(stepFieldTable), spelt out because the builder's
// arrays need it before the table exists; the line below checks it.
const numStepFields = 18

var _ = [1]struct{}{}[len(stepFieldTable)-numStepFields]

// fieldMask is a set of step fields, bit i for stepFieldTable[i].
type fieldMask uint32

// kindSet is a set of step kinds, bit k for StepKind k.
type kindSet uint8

const allKinds = kindSet(1<<KindDo | 1<<KindSet | 1<<KindGate | 1<<KindFanout | 1<<KindRun | 1<<KindEvaluate)

func kinds(ks ...StepKind) kindSet {
	var s kindSet
	for _, k := range ks {
		s |= 1 << k
	}
	return s
}

func (s kindSet) has(k StepKind) bool { return s&(1<<k) != 0 }

// fieldLookup holds what is derived from stepFieldTable.
type fieldLookup struct {
	// slot maps fieldHash(name) to the field's index + 1 (0: none). The
	// multiplier is chosen so that the names do not collide: looking a
	// key up is a hash and one string comparison, which matters because
	// every key of every step is looked up.
	slot [64]uint8
	mul  uint
	// names is the field list of unknown-field messages,
	// " id after ... evaluate ".
	names string
	// common are the fields every construct takes; constructs the
	// construct keys; construct[k] the index of kind k's key.
	common, constructs fieldMask
	construct          [KindEvaluate + 1]int
	// takes[k] are the fields kind k takes besides the common ones and its
	// own key; accepts[k] lists them for messages (", agent, out, ...").
	takes   [KindEvaluate + 1]fieldMask
	accepts [KindEvaluate + 1]string
	// out and with are the positions of the fields the construct rules
	// require of set and run steps.
	out, with int
}

var stepFieldLookup = newFieldLookup()

func newFieldLookup() *fieldLookup {
	fl := &fieldLookup{names: " "}
	for mul := uint(1); !fl.fill(mul); mul++ {
		if mul > 1<<16 {
			panic("ir: the step field names collide in every hash tried")
		}
	}
	for i, f := range stepFieldTable {
		fl.names += f.name + " "
		bit := fieldMask(1) << i
		if f.takenBy == allKinds {
			fl.common |= bit
		}
		switch f.name {
		case "out":
			fl.out = i
		case "with":
			fl.with = i
		}
		if f.construct != 0 {
			fl.constructs |= bit
			fl.construct[f.construct] = i
		}
		for k := KindDo; k <= KindEvaluate; k++ {
			if f.takenBy.has(k) && f.takenBy != allKinds {
				fl.takes[k] |= bit
				fl.accepts[k] += ", " + f.name
			}
		}
	}
	return fl
}

// fill indexes the field names with multiplier mul and reports whether no
// two collided.
func (fl *fieldLookup) fill(mul uint) bool {
	fl.mul, fl.slot = mul, [64]uint8{}
	for i, f := range stepFieldTable {
		h := fl.hash(f.name)
		if fl.slot[h] != 0 {
			return false
		}
		fl.slot[h] = uint8(i + 1)
	}
	return true
}

func (fl *fieldLookup) hash(name string) uint {
	return (uint(name[0])*fl.mul + uint(name[len(name)-1]) + uint(len(name))) & 63
}

// index returns the position of a step field in stepFieldTable, or -1.
func (fl *fieldLookup) index(name string) int {
	if name == "" {
		return -1
	}
	i := int(fl.slot[fl.hash(name)]) - 1
	if i >= 0 && stepFieldTable[i].name == name {
		return i
	}
	return -1
}

// stepBuilder holds the state of checking one step mapping.
type stepBuilder struct {
	v    *validator
	si   *stepInfo
	s    *Step
	n    *node // the step mapping
	path string
	// vals and keys hold each present field's value and key node, by
	// position in stepFieldTable; present has their bits.
	vals, keys [numStepFields]*node
	present    fieldMask
	unknown    bool // some key is not a step field
	runOK      bool // run is a string
}

func (b *stepBuilder) fieldPath(key string) string { return joinPath(b.path, key) }

// str checks that the value of field key is a string. The field's path is
// built only for a diagnostic: most values are fine.
func (b *stepBuilder) str(val *node, key, what string) (string, bool) {
	if val.kind != stringNode {
		b.v.wrongType(val, b.fieldPath(key), what)
		return "", false
	}
	return val.str, true
}

// posInt checks that the value of field key is an integer >= 1.
func (b *stepBuilder) posInt(val *node, key string) (int, bool) {
	if i, ok := posIntOf(val); ok {
		return i, true
	}
	return b.v.posIntValue(val, b.fieldPath(key))
}

// has reports whether the field at index i of stepFieldTable is present.
func (b *stepBuilder) has(i int) bool { return b.present&(1<<i) != 0 }

// buildStep checks step n of flow fl (at path, position index) into si and
// s0, both zero on entry (they are carved from the flow's arrays).
func (v *validator) buildStep(fl *flowInfo, n *node, path string, index int, si *stepInfo, s0 *Step) {
	si.n, si.path, si.fl, si.s = n, path, fl, s0
	s0.Index = index
	fl.steps = append(fl.steps, si)
	fl.f.Steps = append(fl.f.Steps, si.s)
	if n.kind != mapNode {
		v.wrongType(n, path, "a step mapping with id and one of do, set, gate, fanout, run, evaluate")
		si.outPoisoned = true
		fl.unnamed = append(fl.unnamed, si)
		return
	}
	si.present = n
	// One builder per validation, reset for each step: the field checks
	// are called through the table, which would move a fresh one to the
	// heap for every step.
	v.step = stepBuilder{v: v, si: si, s: s0, n: n, path: path}
	b := &v.step
	keys, vals := n.keys(), n.vals()
	for i, k := range keys {
		if f := stepFieldLookup.index(k.str); f >= 0 {
			b.present |= 1 << f
			b.vals[f], b.keys[f] = vals[i], k
		} else {
			b.unknown = true
		}
	}
	beforeType := v.typeErrs
	for i := range stepFieldTable {
		if f := &stepFieldTable[i]; b.has(i) || f.required {
			f.check(b, b.vals[i])
		}
	}
	if !si.idOK {
		fl.unnamed = append(fl.unnamed, si)
	}
	if b.unknown {
		v.unknownKeys(n, path, stepFieldLookup.names, "a step")
	}
	b.constructRules(v.typeErrs == beforeType)
}

// constructRules decides the step's kind: exactly one construct key, and
// only fields that construct takes. The problems are reported only for a
// well-typed step (typed): a type error elsewhere in the step suppresses
// them, a failed pattern, range or length check does not, as in the
// reference. Either way they decide whether the kind is known. A broken
// field (an ensure predicate, attempts, budget...) does not make the kind
// or the output contract uncertain, so the semantic phase still checks the
// rest of the step: those problems are independent and are reported with it.
func (b *stepBuilder) constructRules(typed bool) {
	v, si, lk := b.v, b.si, stepFieldLookup
	count, kind := 0, StepKind(0)
	for k := KindDo; k <= KindEvaluate; k++ {
		if b.has(lk.construct[k]) {
			count, kind = count+1, k
		}
	}
	if count != 1 {
		si.outPoisoned = true
		switch {
		case !typed:
		case count == 0:
			v.d.add(b.n, CodeConstructMix, b.path, "the step has no construct: give it exactly one of do, set, gate, fanout, run, evaluate")
		default:
			var found []string
			for k := KindDo; k <= KindEvaluate; k++ {
				if b.has(lk.construct[k]) {
					found = append(found, k.String())
				}
			}
			v.d.add(b.n, CodeConstructMix, b.path, "the step mixes constructs %s: give it exactly one of do, set, gate, fanout, run, evaluate (split it into several steps)", strings.Join(found, ", "))
		}
		si.orderLeaves(false)
		return
	}
	misplaced := b.present &^ (lk.common | 1<<lk.construct[kind] | lk.takes[kind])
	if misplaced != 0 && typed {
		art := "a"
		if kind == KindEvaluate {
			art = "an"
		}
		for i, f := range stepFieldTable {
			if misplaced&(1<<i) != 0 {
				v.d.add(b.keys[i], CodeFieldForKind, b.fieldPath(f.name), "field %q is not allowed on %s %s step (it accepts: id, after, when, %s%s); remove it or use a construct that takes it", f.name, art, kind, kind, lk.accepts[kind])
			}
		}
	}
	switch kind {
	case KindSet:
		if !b.has(lk.out) {
			si.outPoisoned = true
			if typed {
				v.rejected(b.n, b.fieldPath("out"), "required for set: a set step must name its output contract with out")
			}
		}
	case KindRun:
		if !b.has(lk.with) {
			si.outPoisoned = true
			if typed {
				v.rejected(b.n, b.fieldPath("with"), "required for run: give with, a mapping of the called flow's inputs (with: {} when it has none)")
			}
		}
	}
	switch {
	case kind == KindRun && !b.runOK:
		// run is not a string: the callee is unknown, and SUBFLOW_UNKNOWN
		// for it would repeat the type error.
		si.outPoisoned = true
	case misplaced != 0:
		// Misplaced fields: what the step is meant to be is unclear, so
		// references into it are not checked.
		si.outPoisoned = true
	default:
		si.kindKnown = true
		b.s.Kind = kind
	}
	si.orderLeaves(kind == KindRun)
}

// ---- the fields, in table order ----

func (b *stepBuilder) id(val *node) {
	what := "a step id (lowercase letters, digits, _ and -, starting with a letter)"
	switch {
	case val == nil:
		b.v.missing(b.n, b.path, "id", what)
	case val.kind != stringNode:
		b.v.wrongType(val, b.fieldPath("id"), what)
	case !isStepID(val.str):
		b.v.rejected(val, b.fieldPath("id"), "invalid step id %q: use lowercase letters, digits, _ and -, starting with a letter (for example %q)", val.str, suggestStepID(val.str))
		b.si.badID = val.str
	default:
		b.s.ID = val.str
		b.si.idOK = true
	}
}

func (b *stepBuilder) after(an *node) {
	v := b.v
	if an.kind != listNode {
		v.wrongType(an, b.fieldPath("after"), "a list of step ids")
		return
	}
	for i, e := range an.items() {
		switch {
		case e.kind != stringNode:
			v.wrongType(e, indexPath(b.fieldPath("after"), i), "a step id (lowercase letters, digits, _ and -, starting with a letter)")
		case !isStepID(e.str):
			v.rejected(e, indexPath(b.fieldPath("after"), i), "invalid step id %q in after: use lowercase letters, digits, _ and -, starting with a letter", e.str)
		default:
			if b.si.afterAt != nil || len(b.s.After) != i {
				// An entry was left out: record where the kept ones are.
				if b.si.afterAt == nil {
					for k := range b.s.After {
						b.si.afterAt = append(b.si.afterAt, int32(k))
					}
				}
				b.si.afterAt = append(b.si.afterAt, int32(i))
			}
			b.s.After = append(b.s.After, e.str)
		}
	}
}

func (b *stepBuilder) when(val *node) {
	if w, ok := b.str(val, "when", "an expression string"); ok {
		b.s.When, b.s.HasWhen = w, true
		b.si.leafLater(groupWhen, leaf{base: b.path, rel: "when", n: val, text: w, expression: true, stage: -1})
	}
}

func (b *stepBuilder) do(val *node) {
	if d, ok := b.str(val, "do", "the task text (a string)"); ok {
		b.s.Do = b.si.leafLater(groupDo, leaf{base: b.path, rel: "do", n: val, text: d, stage: -1})
	}
}

func (b *stepBuilder) set(sn *node) {
	v := b.v
	if sn.kind != mapNode {
		v.wrongType(sn, b.fieldPath("set"), "a mapping from field name to expression string")
		return
	}
	for i, k := range sn.keys() {
		val := sn.vals()[i]
		vp := joinPath(b.fieldPath("set"), k.str)
		if val.kind != stringNode {
			v.wrongType(val, vp, "an expression string (quote numbers and booleans: \"1\", \"true\")")
			continue
		}
		b.s.Set = append(b.s.Set, SetField{Name: k.str, Expr: val.str})
		b.si.leafLater(groupSet, leaf{base: vp, n: val, text: val.str, expression: true, stage: -1})
	}
}

func (b *stepBuilder) agent(val *node) {
	if a, ok := b.v.agent(val, b.path, "agent"); ok {
		b.s.Agent = a
	}
}

func (b *stepBuilder) out(val *node) {
	if o, ok := b.str(val, "out", "the name of a declared contract"); ok {
		b.s.Out = o
	} else {
		b.si.outPoisoned = true
	}
}

func (b *stepBuilder) ensure(val *node) {
	b.s.Ensure = b.v.ensureList(val, b.path, b.si, -1)
}

// idempotent (an extension of the reference): the step may be attempted
// again after an interrupted attempt without asking a person.
func (b *stepBuilder) idempotent(val *node) {
	if val.kind != boolNode {
		b.v.wrongType(val, b.fieldPath("idempotent"), "true or false")
		return
	}
	b.s.Idempotent = val.b
}

func (b *stepBuilder) attempts(val *node) {
	if a, ok := b.posInt(val, "attempts"); ok {
		b.s.Attempts = a
	}
}

func (b *stepBuilder) iterate(in *node) {
	v, ip := b.v, b.fieldPath("iterate")
	if in.kind != mapNode {
		v.wrongType(in, ip, "a mapping {max: N, until: EXPRESSION}")
		return
	}
	mx, okMax := v.posInt(in, ip, "max", true)
	u, un, okU := v.str(in, ip, "until", true, "an expression string")
	v.unknownKeys(in, ip, " max until ", "iterate")
	if okU {
		b.si.leafLater(groupUntil, leaf{base: b.path, rel: "iterate.until", n: un, text: u, expression: true, stage: -1})
	}
	if okMax && okU {
		b.s.Iterate = &Iterate{Max: mx, Until: u}
	}
}

func (b *stepBuilder) budget(val *node) {
	b.s.Budget = b.v.budget(val, b.fieldPath("budget"))
}

func (b *stepBuilder) onFail(val *node) {
	of, ok := b.str(val, "on_fail", "a step id")
	if !ok {
		return
	}
	if !isStepID(of) {
		b.v.rejected(val, b.fieldPath("on_fail"), "on_fail must be a step id (lowercase letters, digits, _ and -), got %q", of)
		return
	}
	b.s.OnFail = of
}

func (b *stepBuilder) gate(val *node) {
	b.s.Gate = b.v.gate(val, b.fieldPath("gate"), b.si)
}

func (b *stepBuilder) fanout(val *node) {
	b.s.Fanout = b.v.fanout(val, b.fieldPath("fanout"), b.si)
}

func (b *stepBuilder) run(val *node) {
	if r, ok := b.str(val, "run", "the name of a flow"); ok {
		b.s.Run, b.runOK = r, true
	}
}

func (b *stepBuilder) with(wn *node) {
	if wn.kind != mapNode {
		b.v.wrongType(wn, b.fieldPath("with"), "a mapping from the called flow's input names to values")
		return
	}
	b.s.With = b.v.withValue(wn, &pathPart{base: b.fieldPath("with")}, b.si)
}

func (b *stepBuilder) evaluate(val *node) {
	b.s.Evaluate = b.v.evaluate(val, b.fieldPath("evaluate"), b.si)
}

// suggestStepID turns an invalid step id into a valid one for messages:
// lowercase, other characters as _, a leading letter.
func suggestStepID(id string) string {
	var sb strings.Builder
	for _, r := range strings.ToLower(id) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-':
			sb.WriteRune(r)
		default:
			sb.WriteByte('_')
		}
	}
	s := strings.Trim(sb.String(), "_")
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		s = "s" + s
	}
	return s
}
