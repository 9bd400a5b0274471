package ir

import (
	"math"
	"sort"
	"strconv"
	"strings"
)

// This file is the structural phase (spec/ir.md sections 3-6 and 10.1):
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
	// step) run only when nothing inside it aborted (spec/ir.md 10.1).
	typeErrs int
	// cycleBudget overrides the edge-visit budget of the edge-by-edge
	// cycle check (tests use it to reach the bisecting fallback).
	cycleBudget int

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

	outputOK      bool // output has well-formed from and contract
	fromNode      *node
	contractNode  *node
	fromText      string
	outputContrct string

	maxRounds int

	hasCarry  bool
	carryNode *node
	carry     []*carryInfo
	carryOK   bool

	stepsOK bool // steps is a list
	// unnamedSteps: some step has a missing or invalid id, so a reference
	// to an unknown step may mean that one and is not reported.
	unnamedSteps bool
	steps        []*stepInfo
	byID         map[string]*stepInfo // first occurrence of each id
	hint         *string              // stepHint, once computed
	g            *graph               // built by the semantic phase
	tmpl         *tmplArena           // the validator's, for the steps' leaves
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

	idOK      bool
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

// pathPart is one segment of a location inside a with value: a key of a
// mapping or a list position. Locations are chains of parts, turned into
// strings only when a diagnostic or a Site needs them: building the path
// of every value eagerly costs the nesting depth times the key lengths per
// value, which a hostile spec turns into gigabytes.
type pathPart struct {
	parent *pathPart
	base   string // set on the root part: the path of the with mapping
	key    string
	index  int
	isKey  bool
}

func (p *pathPart) String() string {
	var parts []*pathPart
	for q := p; q != nil; q = q.parent {
		parts = append(parts, q)
	}
	var b strings.Builder
	for i := len(parts) - 1; i >= 0; i-- {
		q := parts[i]
		switch {
		case q.parent == nil:
			b.WriteString(q.base)
		case q.isKey:
			b.WriteByte('.')
			b.WriteString(q.key)
		default:
			b.WriteByte('[')
			b.WriteString(itoa(q.index))
			b.WriteByte(']')
		}
	}
	return b.String()
}

// loc is a location in the document, made a string only when a
// diagnostic or a Site path needs it: base + "." + rel (or base when rel
// is empty), or at for strings inside with values.
type loc struct {
	at        *pathPart
	base, rel string
}

func (p loc) String() string {
	switch {
	case p.at != nil:
		return p.at.String()
	case p.rel == "":
		return p.base
	}
	return p.base + "." + p.rel
}

func locOf(path string) loc { return loc{base: path} }

// leaf is one string scanned for references (spec/ir.md 7.1).
type leaf struct {
	// The leaf's path is base + "." + rel (or base when rel is empty), or
	// at (for strings inside with), built only when needed: most leaves
	// never appear in a diagnostic.
	base, rel string
	at        *pathPart
	n         *node
	text      string
	stage     int // -1 outside fanout stages
	tmpl      *Template
	tok       string // the malformed token, when syn != templateOK
	// The small fields share one word (a flow holds a leaf per string).
	group      leafGroup
	syn        templateSyntax
	expression bool
	over       bool
}

// stepFields is the step field declaration order (spec/ir.md 10.1).
var stepFields = [...]string{"id", "after", "when", "do", "set", "agent", "out", "ensure", "attempts", "iterate", "budget", "on_fail", "gate", "fanout", "run", "with", "evaluate"}

// stepFieldIndex returns the position of a step field in stepFields, or -1.
func stepFieldIndex(key string) int {
	switch key {
	case "id":
		return 0
	case "after":
		return 1
	case "when":
		return 2
	case "do":
		return 3
	case "set":
		return 4
	case "agent":
		return 5
	case "out":
		return 6
	case "ensure":
		return 7
	case "attempts":
		return 8
	case "iterate":
		return 9
	case "budget":
		return 10
	case "on_fail":
		return 11
	case "gate":
		return 12
	case "fanout":
		return 13
	case "run":
		return 14
	case "with":
		return 15
	case "evaluate":
		return 16
	}
	return -1
}

const stepFieldList = " id after when do set agent out ensure attempts iterate budget on_fail gate fanout run with evaluate "

var constructs = [...]string{"do", "set", "gate", "fanout", "run", "evaluate"}

// allowedFor lists, per construct, the fields allowed beside id, after,
// when and the construct key.
var allowedFor = map[string]string{
	"do":       " agent out ensure attempts iterate budget on_fail ",
	"set":      " out ensure ",
	"gate":     " ",
	"fanout":   " attempts budget on_fail ",
	"run":      " with budget on_fail ",
	"evaluate": " out ",
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
// spec/ir.md 4.1). Types are parsed later, in the semantic phase.
func (v *validator) fieldMapping(n *node, path, what string) (*Contract, []*node, []string, bool) {
	if n == nil || n.kind != mapNode {
		v.wrongType(n, path, "a mapping from field name to type string ("+what+" fields; {} for none)")
		return nil, nil, nil, false
	}
	// A reserved key makes the reference report every reserved key of the
	// mapping and nothing else about it (spec/ir.md 4.1, 10.1).
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
		if ok1 && ok2 {
			fl.outputOK = true
			fl.fromText, fl.fromNode, fl.outputContrct, fl.contractNode = from, fromN, ctr, ctrN
		}
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
		// Beyond 2^53 a float64 no longer holds every integer; such a
		// budget is unlimited in practice.
		limit := int64(min(val.num, 1<<53))
		switch key {
		case "tokens":
			b.Tokens = limit
		case "dispatches":
			b.Dispatches = limit
		case "ms":
			b.MS = limit
		}
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

func (v *validator) buildStep(fl *flowInfo, n *node, path string, index int, si *stepInfo, s0 *Step) {
	// si is zero (fresh from the flow's array): setting the few fields
	// avoids copying a whole struct.
	si.n, si.path, si.fl, si.s = n, path, fl, s0
	s0.Index = index
	fl.steps = append(fl.steps, si)
	fl.f.Steps = append(fl.f.Steps, si.s)
	if n.kind != mapNode {
		v.wrongType(n, path, "a step mapping with id and one of do, set, gate, fanout, run, evaluate")
		si.outPoisoned = true
		fl.unnamedSteps = true
		return
	}
	beforeType := v.typeErrs
	s := si.s
	si.present = n
	// One pass over the keys tells which step fields are present.
	var mask uint32
	unknown := false
	for _, k := range n.keys() {
		if i := stepFieldIndex(k.str); i >= 0 {
			mask |= 1 << i
		} else {
			unknown = true
		}
	}
	has := func(key string) bool {
		i := stepFieldIndex(key)
		return i >= 0 && mask&(1<<i) != 0
	}
	fp := func(key string) string { return joinPath(path, key) }

	// id
	if id, idN, ok := v.str(n, path, "id", true, "a step id (lowercase letters, digits, _ and -, starting with a letter)"); ok {
		if !isStepID(id) {
			v.rejected(idN, fp("id"), "invalid step id %q: use lowercase letters, digits, _ and -, starting with a letter", id)
		} else {
			s.ID = id
			si.idOK = true
		}
	}
	if !si.idOK {
		fl.unnamedSteps = true
	}
	// after
	if has("after") {
		an := si.present.get("after")
		if an.kind != listNode {
			v.wrongType(an, fp("after"), "a list of step ids")
		} else {
			for i, e := range an.items() {
				if e.kind != stringNode {
					v.wrongType(e, indexPath(fp("after"), i), "a step id (lowercase letters, digits, _ and -, starting with a letter)")
					continue
				}
				if !isStepID(e.str) {
					v.rejected(e, indexPath(fp("after"), i), "invalid step id %q in after: use lowercase letters, digits, _ and -, starting with a letter", e.str)
					continue
				}
				s.After = append(s.After, e.str)
			}
		}
	}
	// when
	if w, wn, ok := v.str(n, path, "when", false, "an expression string"); ok {
		s.When, s.HasWhen = w, true
		si.leafLater(groupWhen, leaf{base: path, rel: "when", n: wn, text: w, expression: true, stage: -1})
	}
	// do
	if d, dn, ok := v.str(n, path, "do", false, "the task text (a string)"); ok {
		s.Do = si.leafLater(groupDo, leaf{base: path, rel: "do", n: dn, text: d, stage: -1})
	}
	// set
	if has("set") {
		sn := si.present.get("set")
		if sn.kind != mapNode {
			v.wrongType(sn, fp("set"), "a mapping from field name to expression string")
		} else {
			for i, k := range sn.keys() {
				val := sn.vals()[i]
				vp := joinPath(fp("set"), k.str)
				if val.kind != stringNode {
					v.wrongType(val, vp, "an expression string (quote numbers and booleans: \"1\", \"true\")")
					continue
				}
				s.Set = append(s.Set, SetField{Name: k.str, Expr: val.str})
				si.leafLater(groupSet, leaf{base: vp, n: val, text: val.str, expression: true, stage: -1})
			}
		}
	}
	// agent
	if a, an, ok := v.str(n, path, "agent", false, "claude or codex"); ok {
		if a != "claude" && a != "codex" {
			v.schema(an, fp("agent"), "agent must be claude or codex, got %q", a)
		} else {
			s.Agent = a
		}
	}
	// out
	if o, _, ok := v.str(n, path, "out", false, "the name of a declared contract"); ok {
		s.Out = o
	} else if has("out") {
		si.outPoisoned = true
	}
	// ensure
	if has("ensure") {
		s.Ensure = v.ensureList(si.present.get("ensure"), path, si, -1)
	}
	// attempts
	if a, ok := v.posInt(n, path, "attempts", false); ok {
		s.Attempts = a
	}
	// iterate
	if has("iterate") {
		in := si.present.get("iterate")
		ip := fp("iterate")
		if in.kind != mapNode {
			v.wrongType(in, ip, "a mapping {max: N, until: EXPRESSION}")
		} else {
			mx, okMax := v.posInt(in, ip, "max", true)
			u, un, okU := v.str(in, ip, "until", true, "an expression string")
			v.unknownKeys(in, ip, " max until ", "iterate")
			if okU {
				si.leafLater(groupUntil, leaf{base: path, rel: "iterate.until", n: un, text: u, expression: true, stage: -1})
			}
			if okMax && okU {
				s.Iterate = &Iterate{Max: mx, Until: u}
			}
		}
	}
	// budget
	if has("budget") {
		s.Budget = v.budget(si.present.get("budget"), fp("budget"))
	}
	// on_fail
	if of, ofn, ok := v.str(n, path, "on_fail", false, "a step id"); ok {
		if !isStepID(of) {
			v.rejected(ofn, fp("on_fail"), "on_fail must be a step id (lowercase letters, digits, _ and -), got %q", of)
		} else {
			s.OnFail = of
		}
	}
	// gate
	if has("gate") {
		s.Gate = v.gate(si.present.get("gate"), fp("gate"), si)
	}
	// fanout
	if has("fanout") {
		s.Fanout = v.fanout(si.present.get("fanout"), fp("fanout"), si)
	}
	// run
	runOK := false
	if r, _, ok := v.str(n, path, "run", false, "the name of a flow"); ok {
		s.Run, runOK = r, true
	}
	// with
	if has("with") {
		wn := si.present.get("with")
		if wn.kind != mapNode {
			v.wrongType(wn, fp("with"), "a mapping from the called flow's input names to values")
		} else {
			s.With = v.withValue(wn, &pathPart{base: fp("with")}, si)
		}
	}
	// evaluate
	if has("evaluate") {
		s.Evaluate = v.evaluate(si.present.get("evaluate"), fp("evaluate"), si)
	}

	if unknown {
		v.unknownKeys(n, path, stepFieldList, "a step")
	}

	// Whole-object construct rules are reported only for a well-typed
	// step: a failed pattern, range or length check elsewhere in the step
	// does not suppress them, a type error does (spec/ir.md 10.1). Either
	// way they decide whether the step's kind is known. A broken field
	// (an ensure predicate, attempts, budget...) does not make the kind
	// or the output contract uncertain, so the semantic phase still checks
	// the rest of the step (its out contract, references, after and route
	// targets): those problems are independent and are reported with it.
	typed := v.typeErrs == beforeType
	var found []string
	for _, c := range constructs {
		if has(c) {
			found = append(found, c)
		}
	}
	if len(found) != 1 {
		si.outPoisoned = true
		switch {
		case !typed:
		case len(found) == 0:
			v.d.add(n, CodeConstructMix, path, "the step has no construct: give it exactly one of do, set, gate, fanout, run, evaluate")
		default:
			v.d.add(n, CodeConstructMix, path, "the step mixes constructs %s: give it exactly one of do, set, gate, fanout, run, evaluate (split it into several steps)", strings.Join(found, ", "))
		}
		return
	}
	kind := found[0]
	unclear := false
	// Only fields besides id, after, when and the construct itself can be
	// misplaced.
	common := uint32(1)<<stepFieldIndex("id") | 1<<stepFieldIndex("after") | 1<<stepFieldIndex("when") | 1<<stepFieldIndex(kind)
	for _, f := range stepFields {
		if mask&^common == 0 {
			break
		}
		if f == "id" || f == "after" || f == "when" || f == kind || !has(f) {
			continue
		}
		if !hasWord(allowedFor[kind], f) {
			unclear = true
			if !typed {
				continue
			}
			k := n.keyNode(f)
			art := "a"
			if kind == "evaluate" {
				art = "an"
			}
			v.d.add(k, CodeFieldForKind, fp(f), "field %q is not allowed on %s %s step (it accepts: id, after, when, %s%s); remove it or use a construct that takes it", f, art, kind, kind, strings.TrimRight(strings.ReplaceAll(allowedFor[kind], " ", ", "), ", "))
		}
	}
	switch kind {
	case "set":
		if !has("out") {
			si.outPoisoned = true
			if typed {
				v.rejected(n, fp("out"), "required for set: a set step must name its output contract with out")
			}
		}
	case "run":
		if !has("with") {
			si.outPoisoned = true
			if typed {
				v.rejected(n, fp("with"), "required for run: give with, a mapping of the called flow's inputs (with: {} when it has none)")
			}
		}
		if !runOK {
			// run is not a string: the callee is unknown, and SUBFLOW_UNKNOWN
			// for it would repeat the type error.
			si.outPoisoned = true
			return
		}
	}
	if unclear {
		// Misplaced fields: what the step is meant to be is unclear, so
		// its references are not checked either.
		si.outPoisoned = true
		return
	}
	si.kindKnown = true
	switch kind {
	case "do":
		s.Kind = KindDo
	case "set":
		s.Kind = KindSet
	case "gate":
		s.Kind = KindGate
	case "fanout":
		s.Kind = KindFanout
	case "run":
		s.Kind = KindRun
	case "evaluate":
		s.Kind = KindEvaluate
	}
	si.orderLeaves()
}

func (l *leaf) loc() loc { return loc{at: l.at, base: l.base, rel: l.rel} }

// ensureRels holds the common "ensure[i].expr" suffixes.
var ensureRels = [...]string{"ensure[0].expr", "ensure[1].expr", "ensure[2].expr", "ensure[3].expr", "ensure[4].expr", "ensure[5].expr", "ensure[6].expr", "ensure[7].expr"}

func ensureRel(i int) string {
	if i < len(ensureRels) {
		return ensureRels[i]
	}
	return indexPath("ensure", i) + ".expr"
}

// leafGroup orders leaves as spec/ir.md 7.1 scans them.
type leafGroup uint8

const (
	groupDo leafGroup = iota
	groupWhen
	groupSet
	groupUntil
	groupEnsure
	groupWith
	groupEvalIn
	groupOver
	groupStage
)

// leafLater records a leaf; orderLeaves puts the groups in scanning order
// (fields are visited in declaration order, which differs).
// It parses the leaf's template once and returns it.
func (si *stepInfo) leafLater(group leafGroup, l leaf) *Template {
	l.group = group
	l.tmpl, l.syn, l.tok = si.fl.tmpl.parseTemplate(l.text)
	if si.leaves == nil {
		if cap(si.fl.leafFree) < 4 {
			si.fl.leafFree = make([]leaf, 0, 64)
		}
		si.leaves = si.fl.leafFree
	}
	si.leaves = append(si.leaves, l)
	return l.tmpl
}

func (si *stepInfo) orderLeaves() {
	sorted := true
	for i := 1; i < len(si.leaves); i++ {
		if si.leaves[i].group < si.leaves[i-1].group {
			sorted = false
			break
		}
	}
	if !sorted {
		sort.SliceStable(si.leaves, func(i, j int) bool { return si.leaves[i].group < si.leaves[j].group })
	}
	if si.s.Kind != KindRun {
		// with strings are scanned only on run steps. Leaves before the
		// first with leaf stay where they are (no copying them onto
		// themselves).
		first := len(si.leaves)
		for i := range si.leaves {
			if si.leaves[i].group == groupWith {
				first = i
				break
			}
		}
		out := si.leaves[:first]
		for i := first; i < len(si.leaves); i++ {
			if si.leaves[i].group != groupWith {
				out = append(out, si.leaves[i])
			}
		}
		si.leaves = out
	}
}

// ensureList checks the ensure list of the step or stage at parent.
func (v *validator) ensureList(n *node, parent string, si *stepInfo, stage int) []Ensure {
	if n.kind != listNode {
		v.wrongType(n, joinPath(parent, "ensure"), "a list of predicates such as {expr: \"result.ok == true\"}")
		return nil
	}
	out := carveRoom(&v.tmpl.ensures, len(n.items()))
	for i, e := range n.items() {
		pred, ok := v.ensurePredicate(e, parent, i)
		if !ok {
			continue
		}
		if stage >= 0 {
			if si.stageEnsureAt == nil {
				si.stageEnsureAt = make(map[int][]int)
			}
			si.stageEnsureAt[stage] = append(si.stageEnsureAt[stage], i)
		}
		out = append(out, pred)
		if pred.Kind == EnsureExpr {
			group := groupEnsure
			if stage >= 0 {
				group = groupStage
			}
			si.leafLater(group, leaf{base: parent, rel: ensureRel(i), n: e.get("expr"), text: pred.Expr, expression: true, stage: stage})
		}
	}
	return out[:len(out):len(out)]
}

const ensureShapes = "{expr: EXPRESSION}, {file_exists: PATH}, {file_contains: {path: PATH, text: TEXT}} or {judged: {statement: TEXT, stakes: cheap|default|paranoid}}"

// ensurePredicate checks one predicate (spec/ir.md 6.3): a shape that
// matches except for extra keys reports those keys; otherwise the element
// is SCHEMA_INVALID.
func (v *validator) ensurePredicate(e *node, parent string, index int) (Ensure, bool) {
	ok := true
	for _, k := range e.keys() {
		if k.str != "expr" {
			ok = false
			break
		}
	}
	if e.kind == mapNode && ok && len(e.kids) == 2 && e.kids[1].kind == stringNode {
		// The common case, {expr: "..."}, needs no path at all.
		return Ensure{Kind: EnsureExpr, Expr: e.kids[1].str}, true
	}
	path := indexPath(joinPath(parent, "ensure"), index)
	if e.kind != mapNode {
		v.schema(e, path, "a predicate must be one of %s; got %s", ensureShapes, describeNode(e))
		return Ensure{}, false
	}
	type match struct {
		key   string
		pred  Ensure
		extra [][2]string // nested unknown keys: path suffix, key
	}
	var m *match
	for _, key := range [...]string{"expr", "file_exists", "file_contains", "judged"} {
		val := e.get(key)
		if e.keyNode(key) == nil {
			continue
		}
		switch key {
		case "expr":
			if val.kind == stringNode {
				m = &match{key: key, pred: Ensure{Kind: EnsureExpr, Expr: val.str}}
			}
		case "file_exists":
			if val.kind == stringNode {
				m = &match{key: key, pred: Ensure{Kind: EnsureFileExists, Path: val.str}}
			}
		case "file_contains":
			if val.kind == mapNode {
				p, t := val.get("path"), val.get("text")
				if p != nil && p.kind == stringNode && t != nil && t.kind == stringNode {
					mm := &match{key: key, pred: Ensure{Kind: EnsureFileContains, Path: p.str, Text: t.str}}
					for _, k := range val.keys() {
						if k.str != "path" && k.str != "text" {
							mm.extra = append(mm.extra, [2]string{key, k.str})
						}
					}
					m = mm
				}
			}
		case "judged":
			if val.kind == mapNode {
				st, sk := val.get("statement"), val.get("stakes")
				if st != nil && st.kind == stringNode && sk != nil && sk.kind == stringNode && (sk.str == "cheap" || sk.str == "default" || sk.str == "paranoid") {
					mm := &match{key: key, pred: Ensure{Kind: EnsureJudged, Statement: st.str, Stakes: sk.str}}
					for _, k := range val.keys() {
						if k.str != "statement" && k.str != "stakes" {
							mm.extra = append(mm.extra, [2]string{key, k.str})
						}
					}
					m = mm
				}
			}
		}
		if m != nil {
			break
		}
	}
	if m == nil {
		v.schema(e, path, "a predicate must be exactly one of %s", ensureShapes)
		return Ensure{}, false
	}
	ok = true
	for _, k := range e.keys() {
		if k.str != m.key {
			v.d.add(k, CodeUnknownField, joinPath(path, k.str), "this %s predicate takes only the key %q; move %q into a separate predicate or remove it", m.key, m.key, k.str)
			ok = false
		}
	}
	inner := e.get(m.key)
	for _, x := range m.extra {
		v.d.add(inner.keyNode(x[1]), CodeUnknownField, joinPath(joinPath(path, x[0]), x[1]), "unknown field %q in a %s predicate", x[1], m.key)
		ok = false
	}
	return m.pred, ok
}

// gate checks a gate mapping. The routes that are well-formed are kept
// even when another part is broken, so that the semantic phase still checks
// their targets; si.reviseBad records a present but malformed on_revise
// (which must not read as null).
func (v *validator) gate(n *node, path string, si *stepInfo) *Gate {
	if n.kind != mapNode {
		v.wrongType(n, path, "a mapping {on_approve, on_revise, on_kill} (each a step id or null)")
		return nil
	}
	g := &Gate{}
	for _, key := range [...]string{"on_approve", "on_revise", "on_kill"} {
		rp := joinPath(path, key)
		if n.keyNode(key) == nil {
			v.missing(n, path, key, key+": null or a step id")
			si.reviseBad = si.reviseBad || key == "on_revise"
			continue
		}
		r := n.get(key)
		switch {
		case r.kind == nullNode:
		case r.kind == stringNode && !isStepID(r.str):
			v.rejected(r, rp, "%s must be null or a step id (lowercase letters, digits, _ and -), got %q", key, r.str)
			si.reviseBad = si.reviseBad || key == "on_revise"
		case r.kind == stringNode:
			switch key {
			case "on_approve":
				g.OnApprove = r.str
			case "on_revise":
				g.OnRevise = r.str
			case "on_kill":
				g.OnKill = r.str
			}
		default:
			v.wrongType(r, rp, "null or a step id (lowercase letters, digits, _ and -)")
			si.reviseBad = si.reviseBad || key == "on_revise"
		}
	}
	if mr, good := v.posInt(n, path, "max_rounds", false); good {
		g.MaxRounds = mr
	}
	v.unknownKeys(n, path, " on_approve on_revise on_kill max_rounds ", "a gate")
	return g
}

func (v *validator) fanout(n *node, path string, si *stepInfo) *Fanout {
	if n.kind != mapNode {
		v.wrongType(n, path, "a fanout mapping with over, steps, concurrency, isolation, require and merge")
		return nil
	}
	f := &Fanout{Dispatch: "engine"}
	if o, on, ok := v.str(n, path, "over", true, "a single reference to an array, such as \"${input.items}\""); ok {
		f.Over = si.leafLater(groupOver, leaf{base: path, rel: "over", n: on, text: o, stage: -1, over: true})
	}
	if sn := n.get("steps"); n.keyNode("steps") == nil {
		v.missing(n, path, "steps", "a list of at least one stage, each {do: TASK, ...}")
	} else if sn.kind != listNode {
		v.wrongType(sn, joinPath(path, "steps"), "a list of at least one stage")
	} else if len(sn.items()) == 0 {
		v.rejected(sn, joinPath(path, "steps"), "a fanout needs at least one stage: steps: [{do: TASK}]")
	} else {
		for i, st := range sn.items() {
			stage, outOK := v.stage(st, indexPath(joinPath(path, "steps"), i), si, i)
			si.stageNodes = append(si.stageNodes, st)
			si.stageOK = append(si.stageOK, outOK)
			f.Stages = append(f.Stages, stage)
		}
	}
	if c, ok := v.posInt(n, path, "concurrency", true); ok {
		f.Concurrency = c
	}
	if iso, isoN, ok := v.str(n, path, "isolation", true, "worktree or none"); ok {
		if iso != "worktree" && iso != "none" {
			v.schema(isoN, joinPath(path, "isolation"), "isolation must be worktree or none, got %q", iso)
		} else {
			f.Isolation = iso
		}
	}
	if rn := n.get("require"); n.keyNode("require") == nil {
		v.missing(n, path, "require", "require: all, any, or a number of items (at least 1)")
	} else {
		switch {
		case rn.kind == stringNode && rn.str == "all":
			f.Require.All = true
		case rn.kind == stringNode && rn.str == "any":
			f.Require.Any = true
		case rn.kind == numberNode:
			if c, ok := v.posIntValue(rn, joinPath(path, "require")); ok {
				f.Require.Count = c
			}
		default:
			v.wrongType(rn, joinPath(path, "require"), "all, any, or an integer of at least 1")
		}
	}
	if m, mn, ok := v.str(n, path, "merge", true, "sequential"); ok {
		if m != "sequential" {
			v.schema(mn, joinPath(path, "merge"), "merge must be sequential, got %q", m)
		} else {
			f.Merge = m
		}
	}
	if pm := n.get("pre_merge"); n.keyNode("pre_merge") != nil {
		if pm.kind != listNode {
			v.wrongType(pm, joinPath(path, "pre_merge"), "a list of strings")
		} else {
			for i, e := range pm.items() {
				if e.kind != stringNode {
					v.wrongType(e, indexPath(joinPath(path, "pre_merge"), i), "a string")
					continue
				}
				f.PreMerge = append(f.PreMerge, e.str)
			}
		}
	}
	if d, dn, ok := v.str(n, path, "dispatch", false, "engine or consumer"); ok {
		if d != "engine" && d != "consumer" {
			v.schema(dn, joinPath(path, "dispatch"), "dispatch must be engine or consumer, got %q", d)
		} else {
			f.Dispatch = d
		}
	}
	v.unknownKeys(n, path, " over steps concurrency isolation require merge pre_merge dispatch ", "a fanout")
	// A broken part (a concurrency, a stage's ensure...) leaves its field
	// zero; the rest is kept so that the semantic phase still checks over,
	// the stages' references and out contracts (independent problems).
	return f
}

// stage checks one fanout stage. It returns the stage with its broken
// fields left zero, and whether the stage's out is usable (the stage is a
// mapping whose out, if present, is a string): a broken ensure or attempts
// does not make the stage's output contract uncertain.
func (v *validator) stage(n *node, path string, si *stepInfo, index int) (*Stage, bool) {
	st := &Stage{Index: index}
	if n.kind != mapNode {
		v.wrongType(n, path, "a stage mapping {do: TASK, out: CONTRACT, ...}")
		return st, false
	}
	outOK := true
	if d, dn, ok := v.str(n, path, "do", true, "the stage's task text"); ok {
		st.Do = si.leafLater(groupStage, leaf{base: path, rel: "do", n: dn, text: d, stage: index})
	}
	if a, an, ok := v.str(n, path, "agent", false, "claude or codex"); ok {
		if a != "claude" && a != "codex" {
			v.schema(an, joinPath(path, "agent"), "agent must be claude or codex, got %q", a)
		} else {
			st.Agent = a
		}
	}
	if o, _, ok := v.str(n, path, "out", false, "the name of a declared contract"); ok {
		st.Out = o
	} else if n.keyNode("out") != nil {
		outOK = false
	}
	// The stage's when is scanned before its ensures (spec/ir.md 7.1).
	if w, wn, ok := v.str(n, path, "when", false, "an expression string"); ok {
		st.When, st.HasWhen = w, true
		si.leafLater(groupStage, leaf{base: path, rel: "when", n: wn, text: w, expression: true, stage: index})
	}
	if en := n.get("ensure"); n.keyNode("ensure") != nil {
		st.Ensure = v.ensureList(en, path, si, index)
	}
	if a, ok := v.posInt(n, path, "attempts", false); ok {
		st.Attempts = a
	}
	v.unknownKeys(n, path, " do agent out ensure attempts when ", "a fanout stage (stages have no id)")
	return st, outOK
}

func (v *validator) evaluate(n *node, path string, si *stepInfo) *Evaluate {
	if n.kind != mapNode {
		v.wrongType(n, path, "a mapping {command: CMD, timeout_ms: N, in: TEMPLATE}")
		return nil
	}
	before := v.schemaErrs
	e := &Evaluate{}
	if c, cn, ok := v.str(n, path, "command", true, "the command to run (a non-empty string)"); ok {
		if c == "" {
			v.rejected(cn, joinPath(path, "command"), "command must not be empty")
		}
		e.Command = c
	}
	if in, inN, ok := v.str(n, path, "in", false, "a template string"); ok {
		e.In = si.leafLater(groupEvalIn, leaf{base: path, rel: "in", n: inN, text: in, stage: -1})
	}
	if t, ok := v.posInt(n, path, "timeout_ms", true); ok {
		e.TimeoutMS = t
	}
	v.unknownKeys(n, path, " command in timeout_ms ", "evaluate")
	if v.schemaErrs != before {
		return nil
	}
	return e
}

// withValue converts a with mapping, recording every string as a leaf.
func (v *validator) withValue(n *node, at *pathPart, si *stepInfo) *Value {
	switch n.kind {
	case nullNode:
		return &Value{Kind: ValueNull}
	case boolNode:
		return &Value{Kind: ValueBool, Bool: n.b}
	case numberNode:
		if math.IsNaN(n.num) || math.IsInf(n.num, 0) {
			v.schemaErrs++
			v.d.addAt(n, CodeSchemaInvalid, loc{at: at}, "expected a finite number (JSON has no infinity or NaN), got %s", describeNode(n))
		}
		return &Value{Kind: ValueNumber, Number: n.num}
	case stringNode:
		t := si.leafLater(groupWith, leaf{at: at, n: n, text: n.str, stage: -1})
		return &Value{Kind: ValueString, String: t}
	case listNode:
		out := &Value{Kind: ValueList, Items: make([]*Value, len(n.items()))}
		for i, e := range n.items() {
			out.Items[i] = v.withValue(e, &pathPart{parent: at, index: i}, si)
		}
		return out
	default:
		out := &Value{Kind: ValueObject, Keys: make([]string, len(n.keys())), Fields: make([]*Value, len(n.keys()))}
		for i, k := range n.keys() {
			out.Keys[i] = k.str
			out.Fields[i] = v.withValue(n.vals()[i], &pathPart{parent: at, key: k.str, isKey: true}, si)
		}
		return out
	}
}
