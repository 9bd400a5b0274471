package ir

import (
	"math"
	"strconv"
	"strings"
)

// This file is the structural phase (docs/spec-language.md, "How validation proceeds"):
// it walks the loaded tree, reports shape problems and builds the typed
// model the semantic phase checks. A value that fails its shape is left
// out of the model and marked so that later checks do not pile
// consequential errors on it.

// validator holds the state of one validation.
type validator struct {
	d          diags
	schemaErrs int // SCHEMA_INVALID count
	// typeErrs counts the SCHEMA_INVALID problems that the reference's
	// schema library treats as aborting the value (a wrong type, a missing
	// required field, an enum, literal or union mismatch), as opposed to a
	// failed pattern, range, length or refinement check on a value of the
	// right type. A mapping's whole-object rules (the construct rules of a
	// step) run only when nothing inside it aborted (docs/spec-language.md, "How validation proceeds").
	typeErrs int
	// cycleBudget overrides the edge-visit budget of the edge-by-edge
	// cycle check (tests use it to reach the bisecting fallback).
	cycleBudget int
	// slowLoad loads the document with yaml.v3 alone (tests compare the
	// fast paths with it).
	slowLoad bool

	root *node

	contracts      []*contractInfo
	contractByName map[string]*contractInfo
	contractsOK    bool // contracts is a mapping

	entry     string
	entryNode *node
	entryOK   bool // flows.entry is a string naming a declared flow

	flows      []*flowInfo
	flowByName map[string]*flowInfo

	tmpl tmplArena // the templates of every leaf

	step stepBuilder // the step being built (buildStep)

	exprs map[string]compiled // every expression compiled, by source
}

type contractInfo struct {
	name    string
	path    string
	keyNode *node
	c       *Contract
	// fields parallel to c.Fields (when not poisoned).
	fieldNodes []*node
	fieldSrc   []string
	// poisoned: the shape is broken; any path through it is accepted and
	// no further error is reported about it.
	poisoned bool
}

type flowInfo struct {
	name    string
	path    string
	keyNode *node
	n       *node
	f       *Flow

	input *contractInfo // nil when input is missing or broken

	// fromOK and contractOK: output.from and output.contract are strings
	// (each is checked without the other).
	fromOK, contractOK bool
	fromNode           *node
	contractNode       *node
	fromText           string
	outputContrct      string

	maxRounds int

	hasCarry  bool
	carryNode *node
	carry     []*carryInfo
	carryOK   bool

	stepsOK bool // steps is a list
	// unnamed are the steps with a missing or invalid id (or that are not
	// mappings): a reference to an unknown step may mean one of them.
	unnamed []*stepInfo
	steps   []*stepInfo
	byID    map[string]*stepInfo // first occurrence of each id
	hint    *string              // stepHint, once computed
	g       *graph               // built by the semantic phase
	tmpl    *tmplArena           // the validator's, for the steps' leaves
	// leafFree is unused room after the last built step's leaves: the
	// next step's leaves are appended there, so the leaves of all steps
	// share a few backing arrays.
	leafFree []leaf
}

type carryInfo struct {
	name        string
	path        string
	keyNode     *node
	initial     string
	initialNode *node
	initialOK   bool
	revise      []carryReviseInfo
	c           *Carry
}

type carryReviseInfo struct {
	gate    string
	path    string
	keyNode *node
	value   string
	valNode *node
	ok      bool
}

type stepInfo struct {
	s    *Step
	n    *node
	path string
	fl   *flowInfo

	idOK bool
	// badID is the id as written when it is a string but not a valid id
	// (for messages about the step).
	badID string
	// afterAt[k] is the position in the after list of s.After[k]
	// (malformed entries are left out of s.After).
	afterAt   []int32
	kindKnown bool  // exactly one construct and every field well-typed
	present   *node // the step mapping (nil when it is not a mapping)

	// outPoisoned: the step's output contract cannot be determined because
	// of another error; references to it are not checked further.
	outPoisoned bool

	leaves []leaf
	outCI  *contractInfo // the output contract, when known

	// reviseBad: the gate's on_revise is missing or malformed (already
	// reported), so an empty Gate.OnRevise does not mean null.
	reviseBad bool

	// fanout details for diagnostics.
	stageNodes []*node
	// stageOK[j]: stage j is a mapping whose out, if any, is a string (its
	// other fields may be broken; those are left zero).
	stageOK []bool
	// stageEnsureAt[j][k] is the list position of Stages[j].Ensure[k]
	// (malformed predicates are left out of Ensure).
	stageEnsureAt map[int][]int
}

// schema reports a type error: a value of the wrong kind, a missing
// required field, or an enum, literal or union mismatch.
func (v *validator) schema(n *node, path, format string, args ...any) {
	v.typeErrs++
	v.schemaErrs++
	v.d.add(n, CodeSchemaInvalid, path, format, args...)
}

// rejected reports a value of the right kind that fails a pattern, range,
// length or refinement check; unlike a type error it does not suppress the
// whole-object rules of the mapping that contains it.
func (v *validator) rejected(n *node, path, format string, args ...any) {
	v.schemaErrs++
	v.d.add(n, CodeSchemaInvalid, path, format, args...)
}

func (v *validator) missing(m *node, path, key, what string) {
	v.schema(m, joinPath(path, key), "required field %q is missing: add %s", key, what)
}

func (v *validator) wrongType(n *node, path, want string) {
	v.schema(n, path, "expected %s, got %s", want, describeNode(n))
}

func describeNode(n *node) string {
	if n == nil {
		return "nothing"
	}
	switch n.kind {
	case stringNode:
		if len(n.str) > 40 {
			return "the string \"" + n.str[:40] + "...\""
		}
		return "the string \"" + n.str + "\""
	case numberNode:
		return "the number " + formatNumber(n.num)
	case boolNode:
		if n.b {
			return "true"
		}
		return "false"
	case listNode:
		if len(n.items()) == 0 {
			return "an empty list"
		}
	case mapNode:
		if len(n.keys()) == 0 {
			return "an empty mapping"
		}
	}
	return n.kind.String()
}

func formatNumber(f float64) string {
	switch {
	case math.IsNaN(f):
		return ".nan"
	case math.IsInf(f, 1):
		return ".inf"
	case math.IsInf(f, -1):
		return "-.inf"
	}
	return fmtFloat(f)
}

// afterPos returns the position in the after list of s.After[k].
func (si *stepInfo) afterPos(k int) int {
	if si.afterAt == nil {
		return k
	}
	return int(si.afterAt[k])
}

// unknownKeys reports every key of mapping m not in allowed (a
// space-separated list with surrounding spaces).
func (v *validator) unknownKeys(m *node, path, allowed, where string) {
	for _, k := range m.keys() {
		if !hasWord(allowed, k.str) {
			name := strconv.Quote(k.str)
			if k.str == "" {
				name = `"" (an empty or null key)`
			}
			v.d.add(k, CodeUnknownField, joinPath(path, k.str), "unknown field %s in %s; allowed fields are:%s", name, where, strings.TrimRight(strings.ReplaceAll(allowed, " ", ", "), ", ")[1:])
		}
	}
}

// hasWord reports whether list (space-separated words with surrounding
// spaces) contains w, without allocating.
func hasWord(list, w string) bool {
	if w == "" || strings.ContainsRune(w, ' ') {
		return false
	}
	for i := 0; i < len(list); {
		j := strings.Index(list[i:], w)
		if j < 0 {
			return false
		}
		j += i
		if j > 0 && list[j-1] == ' ' && j+len(w) < len(list) && list[j+len(w)] == ' ' {
			return true
		}
		i = j + 1
	}
	return false
}

// str checks an optional or required string field.
func (v *validator) str(m *node, path, key string, required bool, what string) (string, *node, bool) {
	n := m.get(key) // values are never nil: a null is a nullNode
	if n == nil {
		if required {
			v.missing(m, path, key, what)
		}
		return "", nil, false
	}
	if n.kind != stringNode {
		v.wrongType(n, joinPath(path, key), what)
		return "", n, false
	}
	return n.str, n, true
}

// agent checks the agent of a step or stage (the field key of the mapping
// at base).
func (v *validator) agent(val *node, base, key string) (Agent, bool) {
	switch a := Agent(val.str); {
	case val.kind != stringNode:
		v.wrongType(val, joinPath(base, key), "claude or codex")
	case a != AgentClaude && a != AgentCodex:
		v.schema(val, joinPath(base, key), "agent must be claude or codex, got %q", val.str)
	default:
		return a, true
	}
	return "", false
}

// posInt checks a field that must be an integer >= 1.
func (v *validator) posInt(m *node, path, key string, required bool) (int, bool) {
	n := m.get(key)
	if n == nil {
		if required {
			v.missing(m, path, key, "an integer of at least 1")
		}
		return 0, false
	}
	return v.posIntValue(n, joinPath(path, key))
}

// posIntOf returns n's value when it is an integer >= 1 (limits beyond two
// billion are unbounded in practice, so they are capped there).
func posIntOf(n *node) (int, bool) {
	if n.kind != numberNode || math.IsInf(n.num, 0) || n.num != math.Trunc(n.num) || n.num < 1 {
		return 0, false // NaN fails n.num >= 1 as well
	}
	return int(min(n.num, math.MaxInt32)), true
}

func (v *validator) posIntValue(n *node, path string) (int, bool) {
	if n.kind != numberNode || math.IsNaN(n.num) {
		v.wrongType(n, path, "an integer of at least 1")
		return 0, false
	}
	if math.IsInf(n.num, 0) || n.num != math.Trunc(n.num) || n.num < 1 {
		v.rejected(n, path, "expected an integer of at least 1, got %s", describeNode(n))
		return 0, false
	}
	if n.num > math.MaxInt32 {
		// Limits beyond two billion are unbounded in practice.
		return math.MaxInt32, true
	}
	return int(n.num), true
}

// build runs the structural phase over the document root.
func (v *validator) build(root *node) {
	v.root = root
	if root.kind != mapNode {
		v.schema(root, "", "the document must be a mapping with the keys version, contracts and flows; got %s", describeNode(root))
		return
	}
	// version
	if vn := root.get("version"); root.keyNode("version") == nil {
		v.missing(root, "", "version", "version: 1")
	} else if vn.kind != numberNode || vn.num != 1 {
		v.schema(vn, "version", "version must be the number 1 (unquoted), got %s", describeNode(vn))
	}
	// contracts
	v.contractByName = make(map[string]*contractInfo)
	if cn := root.get("contracts"); root.keyNode("contracts") == nil {
		v.missing(root, "", "contracts", "a contracts mapping (it may be {})")
	} else if cn.kind != mapNode {
		v.wrongType(cn, "contracts", "a mapping from contract name to fields")
	} else {
		v.contractsOK = true
		for i, k := range cn.keys() {
			v.buildContract(k, cn.vals()[i])
		}
	}
	// flows
	v.flowByName = make(map[string]*flowInfo)
	if fn := root.get("flows"); root.keyNode("flows") == nil {
		v.missing(root, "", "flows", "a flows mapping with entry and at least one flow")
	} else if fn.kind != mapNode {
		v.wrongType(fn, "flows", "a mapping with entry and one key per flow")
	} else {
		v.buildFlows(fn)
	}
	v.unknownKeys(root, "", " version contracts flows ", "the document root")
}

func (v *validator) buildContract(k, val *node) {
	path := joinPath("contracts", k.str)
	ci := &contractInfo{name: k.str, path: path, keyNode: k}
	v.contracts = append(v.contracts, ci)
	if _, dup := v.contractByName[k.str]; !dup {
		v.contractByName[k.str] = ci
	}
	if !isName(k.str) {
		v.rejected(k, path, "contract name %q is invalid: use letters, digits and _, not starting with a digit", k.str)
		ci.poisoned = true
	}
	c, nodes, srcs, ok := v.fieldMapping(val, path, "contract")
	if !ok {
		ci.poisoned = true
		return
	}
	c.Name = k.str
	ci.c, ci.fieldNodes, ci.fieldSrc = c, nodes, srcs
}

// fieldMapping checks a field-to-type mapping (a contract or a flow input,
// docs/spec-language.md, "Contracts and types"). Types are parsed later, in the semantic phase.
func (v *validator) fieldMapping(n *node, path, what string) (*Contract, []*node, []string, bool) {
	if n == nil || n.kind != mapNode {
		v.wrongType(n, path, "a mapping from field name to type string ("+what+" fields; {} for none)")
		return nil, nil, nil, false
	}
	// A reserved key makes the reference report every reserved key of the
	// mapping and nothing else about it (docs/spec-language.md, "How validation proceeds").
	reserved := false
	for _, k := range n.keys() {
		if isReserved(k.str) {
			v.d.add(k, CodeReservedField, joinPath(path, k.str), "field name %q is reserved; rename the field", k.str)
			reserved = true
		}
	}
	if reserved {
		return nil, nil, nil, false
	}
	ok := true
	c := &Contract{Fields: make([]Field, 0, len(n.keys()))}
	nodes := make([]*node, 0, len(n.keys()))
	srcs := make([]string, 0, len(n.keys()))
	for i, k := range n.keys() {
		fp := joinPath(path, k.str)
		if !isName(k.str) {
			v.rejected(k, fp, "field name %q is invalid: use letters, digits and _, not starting with a digit", k.str)
			ok = false
			continue
		}
		tn := n.vals()[i]
		if tn.kind != stringNode {
			v.wrongType(tn, fp, "a type string such as string, number, Item[] or a|b (nested mappings are not allowed: declare another contract and name it)")
			ok = false
			continue
		}
		c.Fields = append(c.Fields, Field{Name: k.str})
		nodes = append(nodes, tn)
		srcs = append(srcs, tn.str)
	}
	if !ok {
		return nil, nil, nil, false
	}
	if len(c.Fields) > 8 {
		c.index = make(map[string]int, len(c.Fields))
		for i, f := range c.Fields {
			c.index[f.Name] = i
		}
	}
	return c, nodes, srcs, true
}

func (v *validator) buildFlows(fn *node) {
	if en := fn.get("entry"); fn.keyNode("entry") == nil {
		v.missing(fn, "flows", "entry", "entry: NAME naming the flow a run starts")
	} else if en.kind != stringNode {
		v.wrongType(en, "flows.entry", "the name of a flow")
	} else {
		v.entry, v.entryNode = en.str, en
	}
	for i, k := range fn.keys() {
		if k.str == "entry" {
			continue
		}
		v.buildFlow(k, fn.vals()[i])
	}
	if v.entryNode != nil {
		if _, ok := v.flowByName[v.entry]; ok {
			v.entryOK = true
		}
	}
}

func (v *validator) buildFlow(k, n *node) {
	path := joinPath("flows", k.str)
	fl := &flowInfo{name: k.str, path: path, keyNode: k, n: n, byID: make(map[string]*stepInfo), tmpl: &v.tmpl}
	fl.f = &Flow{Name: k.str}
	v.flows = append(v.flows, fl)
	if _, dup := v.flowByName[k.str]; !dup {
		v.flowByName[k.str] = fl
	}
	if n.kind != mapNode {
		v.wrongType(n, path, "a flow mapping with input, output and steps")
		return
	}
	// input
	if in := n.get("input"); n.keyNode("input") == nil {
		v.missing(n, path, "input", "input: {} or a mapping of input fields to types")
	} else if c, nodes, srcs, ok := v.fieldMapping(in, joinPath(path, "input"), "input"); ok {
		fl.input = &contractInfo{path: joinPath(path, "input"), c: c, fieldNodes: nodes, fieldSrc: srcs}
	}
	// output
	if on := n.get("output"); n.keyNode("output") == nil {
		v.missing(n, path, "output", "output: {from: \"${STEP.output}\", contract: NAME}")
	} else if on.kind != mapNode {
		v.wrongType(on, joinPath(path, "output"), "a mapping {from: \"${STEP.output}\", contract: NAME}")
	} else {
		op := joinPath(path, "output")
		from, fromN, ok1 := v.str(on, op, "from", true, "a step output reference such as \"${STEP.output}\"")
		ctr, ctrN, ok2 := v.str(on, op, "contract", true, "the name of a declared contract")
		v.unknownKeys(on, op, " from contract ", "a flow output")
		fl.fromOK, fl.fromText, fl.fromNode = ok1, from, fromN
		fl.contractOK, fl.outputContrct, fl.contractNode = ok2, ctr, ctrN
	}
	// budget
	if bn := n.get("budget"); n.keyNode("budget") != nil {
		fl.f.Budget = v.budget(bn, joinPath(path, "budget"))
	}
	// max_rounds
	if mr, ok := v.posInt(n, path, "max_rounds", false); ok {
		fl.maxRounds = mr
		fl.f.MaxRounds = mr
	}
	// carry
	if cn := n.get("carry"); n.keyNode("carry") != nil {
		fl.hasCarry = true
		fl.carryNode = n.keyNode("carry")
		v.buildCarry(fl, cn, joinPath(path, "carry"))
	}
	// steps
	if sn := n.get("steps"); n.keyNode("steps") == nil {
		v.missing(n, path, "steps", "a list of steps")
	} else if sn.kind != listNode {
		v.wrongType(sn, joinPath(path, "steps"), "a list of steps")
	} else {
		fl.stepsOK = true
		fl.byID = make(map[string]*stepInfo, len(sn.items()))
		fl.steps = make([]*stepInfo, 0, len(sn.items()))
		// One allocation for all steps of the flow.
		infos := make([]stepInfo, len(sn.items()))
		steps := make([]Step, len(sn.items()))
		stepsPath := joinPath(path, "steps")
		fl.leafFree = make([]leaf, 0, 2*len(sn.items())+4)
		for i, s := range sn.items() {
			si := &infos[i]
			v.buildStep(fl, s, indexPath(stepsPath, i), i, si, &steps[i])
			if n := len(si.leaves); n > 0 {
				// Clip the step's leaves so that the next step's cannot
				// overwrite them; the rest of the array is the next's room.
				fl.leafFree = si.leaves[n:n:cap(si.leaves)]
				si.leaves = si.leaves[:n:n]
			}
		}
	}
	v.unknownKeys(n, path, " input output budget max_rounds carry steps ", "a flow")
}

func (v *validator) budget(n *node, path string) *Budget {
	if n.kind != mapNode {
		v.wrongType(n, path, "a mapping with at least one of usd, tokens, dispatches, ms")
		return nil
	}
	before := v.schemaErrs
	b := &Budget{}
	known := 0
	if un := n.get("usd"); n.keyNode("usd") != nil {
		known++
		if un.kind != numberNode || math.IsNaN(un.num) {
			v.wrongType(un, joinPath(path, "usd"), "a finite number greater than 0")
		} else if math.IsInf(un.num, 0) || un.num <= 0 {
			v.rejected(un, joinPath(path, "usd"), "expected a finite number greater than 0, got %s", describeNode(un))
		} else {
			b.USD = un.num
		}
	}
	for _, key := range [...]string{"tokens", "dispatches", "ms"} {
		if n.keyNode(key) == nil {
			continue
		}
		known++
		val := n.get(key)
		if _, ok := v.posIntValue(val, joinPath(path, key)); !ok {
			continue
		}
		b.setCount(key, val.num)
	}
	v.unknownKeys(n, path, " usd tokens dispatches ms ", "a budget")
	if v.schemaErrs == before && known == 0 {
		v.rejected(n, path, "budget requires at least one of usd, tokens, dispatches, ms")
	}
	if v.schemaErrs != before {
		return nil
	}
	return b
}

// setCount sets the count key (tokens, dispatches or ms) of b from num;
// false when key is none of them. Beyond 2^53 a float64 no longer holds
// every integer; such a budget is unlimited in practice.
func (b *Budget) setCount(key string, num float64) bool {
	limit := int64(min(num, 1<<53))
	switch key {
	case "tokens":
		b.Tokens = limit
	case "dispatches":
		b.Dispatches = limit
	case "ms":
		b.MS = limit
	default:
		return false
	}
	return true
}

func (v *validator) buildCarry(fl *flowInfo, n *node, path string) {
	if n.kind != mapNode {
		v.wrongType(n, path, "a mapping from variable name to {initial, on_revise}")
		return
	}
	reserved := false
	for _, k := range n.keys() {
		if isReserved(k.str) {
			v.d.add(k, CodeReservedField, joinPath(path, k.str), "carry variable name %q is reserved; rename it", k.str)
			reserved = true
		}
	}
	if reserved {
		return
	}
	fl.carryOK = true
	for i, k := range n.keys() {
		vp := joinPath(path, k.str)
		ci := &carryInfo{name: k.str, path: vp, keyNode: k}
		if !isStepID(k.str) {
			v.rejected(k, vp, "carry variable name %q is invalid: use lowercase letters, digits, _ and -, starting with a letter", k.str)
			fl.carryOK = false
		}
		fl.carry = append(fl.carry, ci)
		vn := n.vals()[i]
		if vn.kind != mapNode {
			v.wrongType(vn, vp, "a mapping {initial: \"${STEP.output...}\", on_revise: {GATE: \"${...}\"}}")
			fl.carryOK = false
			continue
		}
		init, initN, ok := v.str(vn, vp, "initial", true, "a single reference such as \"${STEP.output.field}\"")
		if ok && init == "" {
			v.rejected(initN, joinPath(vp, "initial"), "initial must be a non-empty reference such as \"${STEP.output.field}\"")
			ok = false
		}
		ci.initial, ci.initialNode, ci.initialOK = init, initN, ok
		if rn := vn.get("on_revise"); vn.keyNode("on_revise") != nil {
			rp := joinPath(vp, "on_revise")
			if rn.kind != mapNode {
				v.wrongType(rn, rp, "a mapping from gate step id to a reference")
			} else {
				for j, gk := range rn.keys() {
					ep := joinPath(rp, gk.str)
					e := carryReviseInfo{gate: gk.str, path: ep, keyNode: gk, ok: true}
					if !isStepID(gk.str) {
						v.rejected(gk, ep, "%q is not a step id: on_revise keys name gate steps (lowercase letters, digits, _ and -)", gk.str)
						e.ok = false
					}
					val := rn.vals()[j]
					e.valNode = val
					if val.kind != stringNode {
						v.wrongType(val, ep, "a non-empty reference such as \"${STEP.output.field}\"")
						e.ok = false
					} else if val.str == "" {
						v.rejected(val, ep, "an on_revise value must be a non-empty reference such as \"${STEP.output.field}\"")
						e.ok = false
					} else {
						e.value = val.str
					}
					ci.revise = append(ci.revise, e)
				}
			}
		}
		v.unknownKeys(vn, vp, " initial on_revise ", "a carry variable")
	}
}
