package migrate

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/stratum-go/stratum/expr"
	"github.com/stratum-go/stratum/internal/yamlerr"
)

// Location is one place where a construct was detected.
type Location struct {
	// Path is the dotted path from the document root: mapping keys joined
	// with ".", sequence positions as "[i]" ("flows.main.steps[1].depends_on").
	// The document root itself is "root".
	Path string `json:"path"`
	// Line and Column are 1-based; both are 0 when the position is unknown
	// (a parser error that names no line, or an empty document).
	Line   int `json:"line,omitempty"`
	Column int `json:"column,omitempty"`
}

// Finding is one legacy construct and every place it was detected.
type Finding struct {
	ID     string `json:"id"`
	Status Status `json:"status"`
	// Legacy and V1 are the labels of the v0.x construct and of what
	// replaces it in v1.
	Legacy string `json:"legacy"`
	V1     string `json:"v1"`
	// Note is advice for re-authoring; it may be empty.
	Note string `json:"note"`
	// Line and Column are those of the first detection (At[0]).
	Line   int `json:"line,omitempty"`
	Column int `json:"column,omitempty"`
	// At lists every detection, in detection order.
	At []Location `json:"at"`
}

// Report is the result of checking one document ([Check]).
type Report struct {
	// Version is the document's version as text; meaningful only when
	// HasVersion is true (it may legitimately be the empty string).
	Version string
	// HasVersion reports whether `version` was a string or a number.
	HasVersion bool
	// Findings in order of first detection; each id appears once.
	Findings []Finding
}

// Check classifies the legacy constructs of one YAML document. It never
// fails: text that is not a readable legacy document yields an
// "unreadable" finding and scanning goes on wherever it can.
func Check(src []byte) *Report {
	s := &scanner{report: &Report{Findings: []Finding{}}, index: map[string]int{}, cat: catalogue()}
	root, err := parseDocument(src)
	if err != nil {
		line, col := 0, 0
		var pe *parseError
		if errors.As(err, &pe) {
			line, col = pe.line, pe.col
		}
		s.unreadable(err.Error(), "root", line, col)
		return s.report
	}
	if root == nil {
		s.unreadable("YAML root must be a mapping", "root", 0, 0)
		return s.report
	}
	s.scan(root)
	return s.report
}

// parseError carries the position of a parser problem, when it is known
// (line and col 0 when not).
type parseError struct {
	msg       string
	line, col int
}

func (e *parseError) Error() string { return e.msg }

// yamlError places an error of yaml.v3 in src: its own line is often not the
// one to fix (see internal/yamlerr, shared with ir).
func yamlError(src []byte, err error) *parseError {
	p := yamlerr.Locate(src, err)
	return &parseError{msg: fmt.Sprintf("yaml: line %d: %s", p.Line, p.Text()), line: p.Line, col: p.Column}
}

// parseDocument parses exactly one YAML document and returns its root node,
// or nil for an empty document. Duplicate mapping keys and a second document
// are errors, as they were for the reference's loader.
func parseDocument(src []byte) (root *yaml.Node, err error) {
	// yaml.v3 has panicked on some malformed inputs in the past; a panic in
	// the parser must not take the command (or an embedding server) down.
	defer func() {
		if r := recover(); r != nil {
			root, err = nil, &parseError{msg: fmt.Sprintf("yaml: parser failed: %v", r)}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, yamlError(src, err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return nil, &parseError{msg: fmt.Sprintf("yaml: line %d: source contains more than one document; expected one", next.Line), line: next.Line}
	case !errors.Is(err, io.EOF):
		return nil, yamlError(src, err)
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	if msgs, line := duplicateKeys(doc.Content[0]); len(msgs) > 0 {
		return nil, &parseError{msg: strings.Join(msgs, "; "), line: line}
	}
	return doc.Content[0], nil
}

// duplicateKeys lists every mapping key that repeats an earlier key of the
// same mapping, in document order, and the line of the first. Each node is
// visited once, so aliases cannot make the walk expensive.
func duplicateKeys(root *yaml.Node) (msgs []string, firstLine int) {
	seen := map[*yaml.Node]bool{}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n == nil || seen[n] {
			return
		}
		seen[n] = true
		switch n.Kind {
		case yaml.AliasNode:
			walk(n.Alias)
		case yaml.MappingNode:
			first := map[string]int{}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := resolve(n.Content[i])
				if k.Kind == yaml.ScalarNode {
					if line, dup := first[k.Value]; dup {
						if len(msgs) == 0 {
							firstLine = n.Content[i].Line
						}
						msgs = append(msgs, fmt.Sprintf("yaml: line %d: mapping key %q already defined at line %d", n.Content[i].Line, k.Value, line))
					} else {
						first[k.Value] = n.Content[i].Line
					}
				}
				walk(n.Content[i])
				walk(n.Content[i+1])
			}
		default:
			for _, c := range n.Content {
				walk(c)
			}
		}
	}
	walk(root)
	return msgs, firstLine
}

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	// yaml.v3 never produces an alias of an alias, but a bound keeps a
	// hand-built node graph from looping.
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 64; i++ {
		n = n.Alias
	}
	return n
}

// mapping is a resolved YAML mapping with key lookup by text.
type mapping struct{ node *yaml.Node }

// asMapping returns the mapping n resolves to, if it is one.
func asMapping(n *yaml.Node) (mapping, bool) {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return mapping{}, false
	}
	return mapping{n}, true
}

// entry is one key/value pair; key is the key node as written (for its
// position), value the value node as written.
type entry struct {
	name       string
	key, value *yaml.Node
}

func (m mapping) entries() []entry {
	var out []entry
	for i := 0; i+1 < len(m.node.Content); i += 2 {
		k := m.node.Content[i]
		out = append(out, entry{name: resolve(k).Value, key: k, value: m.node.Content[i+1]})
	}
	return out
}

// properties returns the entries the way the reference iterates the object
// its YAML library builds from the mapping: keys become property names
// (null "", booleans "true"/"false", numbers as JavaScript writes them:
// `1.0:` is "1", `0x10:` is "16"), and the names that are canonical array
// indices ("0", "1", ... "4294967294") come first in ascending numeric
// order, then the others in document order. Two keys with the same name
// are one property: the first position, the last value.
func (m mapping) properties() []entry {
	var out []entry
	at := map[string]int{}
	for _, e := range m.entries() {
		e.name = propertyName(e.key)
		if i, dup := at[e.name]; dup {
			out[i].value = e.value
			continue
		}
		at[e.name] = len(out)
		out = append(out, e)
	}
	slices.SortStableFunc(out, func(a, b entry) int {
		ai, aIndex := arrayIndex(a.name)
		bi, bIndex := arrayIndex(b.name)
		switch {
		case aIndex && bIndex:
			return cmp.Compare(ai, bi)
		case aIndex:
			return -1
		case bIndex:
			return 1
		}
		return 0
	})
	return out
}

// propertyName is the JavaScript property name a mapping key becomes.
func propertyName(key *yaml.Node) string {
	k := resolve(key)
	if k == nil {
		return ""
	}
	if k.Kind != yaml.ScalarNode {
		return k.Value
	}
	switch kindOf(k) {
	case kindNull:
		return ""
	case kindBool:
		if k.Style&yaml.TaggedStyle != 0 {
			var b bool
			if k.Decode(&b) == nil {
				return strconv.FormatBool(b)
			}
			return k.Value
		}
		return strconv.FormatBool(coreTrue.MatchString(k.Value))
	case kindInt, kindFloat:
		if f, ok := numberValue(k.Value); ok {
			return expr.FormatNumber(f)
		}
	}
	return k.Value
}

// arrayIndex reports whether name is a canonical array index (an integer
// from 0 to 2^32-2 without sign or leading zeros), which JavaScript orders
// before every other property name.
func arrayIndex(name string) (uint64, bool) {
	if name == "" || len(name) > 10 || (name[0] == '0' && len(name) > 1) {
		return 0, false
	}
	n, err := strconv.ParseUint(name, 10, 64)
	return n, err == nil && n <= 4294967294
}

// get returns the entry for key. A key with a null value is present.
func (m mapping) get(key string) (entry, bool) {
	if m.node == nil {
		return entry{}, false
	}
	for i := 0; i+1 < len(m.node.Content); i += 2 {
		k := resolve(m.node.Content[i])
		if k.Kind == yaml.ScalarNode && k.Value == key {
			return entry{name: key, key: m.node.Content[i], value: m.node.Content[i+1]}, true
		}
	}
	return entry{}, false
}

func (m mapping) has(key string) bool {
	_, ok := m.get(key)
	return ok
}

// isString reports whether key holds the string want.
func (m mapping) isString(key, want string) bool {
	e, ok := m.get(key)
	if !ok {
		return false
	}
	v := resolve(e.value)
	return v.Kind == yaml.ScalarNode && kindOf(v) == kindString && v.Value == want
}

// holdsString reports whether key holds any string.
func (m mapping) holdsString(key string) bool {
	e, ok := m.get(key)
	if !ok {
		return false
	}
	v := resolve(e.value)
	return v.Kind == yaml.ScalarNode && kindOf(v) == kindString
}

// isTrue reports whether key holds the boolean true.
func (m mapping) isTrue(key string) bool {
	e, ok := m.get(key)
	if !ok {
		return false
	}
	v := resolve(e.value)
	if v.Kind != yaml.ScalarNode || kindOf(v) != kindBool {
		return false
	}
	if v.Style&yaml.TaggedStyle != 0 {
		// An explicit !!bool tag: accept the spellings yaml.v3 would.
		var b bool
		return v.Decode(&b) == nil && b
	}
	return coreTrue.MatchString(v.Value)
}

// sequence returns the elements of key's value when it is a sequence.
func (m mapping) sequence(key string) ([]*yaml.Node, bool) {
	e, ok := m.get(key)
	if !ok {
		return nil, false
	}
	v := resolve(e.value)
	if v == nil || v.Kind != yaml.SequenceNode {
		return nil, false
	}
	return v.Content, true
}

// nonEmptySequence reports whether key holds a sequence with an element.
func (m mapping) nonEmptySequence(key string) bool {
	items, ok := m.sequence(key)
	return ok && len(items) > 0
}

// scanner accumulates findings, merging repeated detections of one id.
type scanner struct {
	report *Report
	index  map[string]int // id -> position in report.Findings
	cat    map[string]construct
}

func (s *scanner) add(id, note, path string, line, col int) {
	loc := Location{Path: path, Line: line, Column: col}
	if i, ok := s.index[id]; ok {
		s.report.Findings[i].At = append(s.report.Findings[i].At, loc)
		return
	}
	c := s.cat[id]
	if note == "" {
		note = c.note
	}
	s.index[id] = len(s.report.Findings)
	s.report.Findings = append(s.report.Findings, Finding{
		ID: id, Status: c.status, Legacy: c.legacy, V1: c.v1, Note: note,
		Line: line, Column: col, At: []Location{loc},
	})
}

// at records a detection positioned at node n.
func (s *scanner) at(id, path string, n *yaml.Node) {
	s.add(id, "", path, n.Line, n.Column)
}

// unreadable records an unreadable finding. Its note is the specific reason;
// if the id was already recorded, only the location is added.
func (s *scanner) unreadable(note, path string, line, col int) {
	s.add(idUnreadable, note, path, line, col)
}

var legacyVersions = map[string]bool{"0.1": true, "0.2": true, "0.3": true}

func (s *scanner) scan(rootNode *yaml.Node) {
	root, ok := asMapping(rootNode)
	if !ok {
		s.unreadable("YAML root must be a mapping", "root", rootNode.Line, rootNode.Column)
		return
	}
	s.checkVersion(root)

	if e, ok := root.get("contracts"); ok {
		if _, isMap := asMapping(e.value); isMap {
			s.at(idContracts, "contracts", e.key)
		}
	}
	if e, ok := root.get("functions"); ok {
		if fns, isMap := asMapping(e.value); isMap {
			for _, fn := range fns.properties() {
				s.scanFunction("functions."+fn.name, fn.value)
			}
		}
	}
	if e, ok := root.get("flows"); ok {
		if flows, isMap := asMapping(e.value); isMap {
			for _, fl := range flows.properties() {
				s.scanFlow("flows."+fl.name, fl.value)
			}
		}
	}
}

func (s *scanner) checkVersion(root mapping) {
	e, ok := root.get("version")
	if !ok {
		s.unreadable("expected version 0.1, 0.2, or 0.3", "version", root.node.Line, root.node.Column)
		return
	}
	v := resolve(e.value)
	if v.Kind == yaml.ScalarNode {
		switch kindOf(v) {
		case kindString:
			s.report.Version, s.report.HasVersion = v.Value, true
		case kindInt, kindFloat:
			if f, ok := numberValue(v.Value); ok {
				s.report.Version, s.report.HasVersion = expr.FormatNumber(f), true
			} else {
				// An explicit numeric tag on text that is no number: the
				// text is what the author wrote.
				s.report.Version, s.report.HasVersion = v.Value, true
			}
		}
	}
	if !s.report.HasVersion || !legacyVersions[s.report.Version] {
		s.unreadable("expected version 0.1, 0.2, or 0.3", "version", e.key.Line, e.key.Column)
	}
}

func (s *scanner) scanFunction(path string, n *yaml.Node) {
	fn, ok := asMapping(n)
	if !ok {
		return
	}
	if e, ok := fn.get("mode"); ok {
		switch {
		case fn.isString("mode", "infer"):
			s.at(idFunctionInfer, path+".mode", e.key)
		case fn.isString("mode", "compute"):
			s.at(idFunctionCompute, path+".mode", e.key)
		case fn.isString("mode", "gate"):
			s.at(idFunctionGate, path+".mode", e.key)
		}
	}
	if _, ok := fn.sequence("ensure"); ok {
		e, _ := fn.get("ensure")
		s.at(idEnsureExpressions, path+".ensure", e.key)
	}
}

func (s *scanner) scanFlow(path string, n *yaml.Node) {
	flow, ok := asMapping(n)
	if !ok {
		return
	}
	if e, ok := flow.get("max_rounds"); ok {
		s.at(idMaxRounds, path+".max_rounds", e.key)
	}
	if e, ok := flow.get("output"); ok {
		s.at(idFlowOutput, path+".output", e.key)
	}
	steps, _ := flow.sequence("steps")
	for i, stepNode := range steps {
		s.scanStep(fmt.Sprintf("%s.steps[%d]", path, i), stepNode, flow.has("max_rounds"))
	}
}

// The parallel_dispatch options that have no v1 equivalent.
func parallelUnsupported(step mapping) bool {
	return step.isString("isolation", "branch") ||
		step.isString("merge", "manual") ||
		step.holdsString("pre_merge_verify") ||
		step.has("reasoning_template") ||
		step.has("task_reasoning_template") ||
		step.has("task_timeout") ||
		step.isTrue("capture_diff") ||
		step.isTrue("defer_advance")
}

// scanStep applies the step rules a-o in their fixed order (docs/migrate.md,
// "Order of the findings").
func (s *scanner) scanStep(path string, n *yaml.Node, flowHasMaxRounds bool) {
	step, ok := asMapping(n)
	if !ok {
		return
	}
	keyed := func(id, key string) {
		e, _ := step.get(key)
		s.at(id, path+"."+key, e.key)
	}

	// a. inline
	if step.isString("type", "inline") || (step.has("intent") && !step.has("function") && !step.has("flow")) {
		s.at(idInline, path, n)
	}
	// b. subflow
	if step.isString("type", "flow") || step.has("flow") {
		s.at(idSubflow, path, n)
	}
	// c. decompose
	if step.isString("type", "decompose") {
		if hasTaskDependencies(step) {
			s.at(idDecomposeDependencies, path, n)
		} else {
			s.at(idDecompose, path, n)
		}
	}
	// d. parallel_dispatch
	if step.isString("type", "parallel_dispatch") {
		s.at(idParallelDispatch, path, n)
		if parallelUnsupported(step) {
			s.at(idParallelUnsupported, path, n)
		}
	}
	// e. pipeline stages
	if step.isString("type", "pipeline") {
		var when, exit, nested bool
		stages, _ := step.sequence("stages")
		for _, st := range stages {
			if stage, ok := asMapping(st); ok {
				when = when || stage.has("when")
				exit = exit || stage.has("exit_when")
				nested = nested || stage.has("fanout") || stage.has("join")
			}
		}
		if when {
			keyed(idPipelineWhen, "stages")
		}
		if exit {
			keyed(idPipelineExit, "stages")
		}
		if nested {
			keyed(idPipelineNested, "stages")
		}
	}
	// f. judge
	if e, ok := step.get("judge"); ok {
		if judge, isMap := asMapping(e.value); isMap {
			var fold, unsupported bool
			preds, _ := judge.sequence("predicates")
			for _, p := range preds {
				if pred, ok := asMapping(p); ok {
					fold = fold || pred.isString("type", "deterministic") || pred.isString("type", "judged")
					unsupported = unsupported || pred.isString("type", "verified") || pred.has("applied_gate")
				}
			}
			unsupported = unsupported || judge.has("budget")
			if fold {
				pe, _ := judge.get("predicates")
				s.at(idJudgeFold, path+".judge.predicates", pe.key)
			}
			if unsupported {
				s.at(idJudgeUnsupported, path+".judge", e.key)
			}
		}
	}
	// g. iterate
	if step.has("max_iterations") || step.has("exit_criterion") {
		s.at(idIterate, path, n)
	}
	// h. ensure / exit_criterion expressions
	if _, isSeq := step.sequence("ensure"); step.has("exit_criterion") || isSeq {
		s.at(idEnsureExpressions, path, n)
	}
	// i. scoring and accumulation
	if step.has("score_expr") || step.has("accumulate") || step.has("accumulate_key") {
		s.at(idScoreAccumulate, path, n)
	}
	// j-m. dependency and routing keys
	if step.nonEmptySequence("depends_on") {
		keyed(idDependsOn, "depends_on")
	}
	if step.has("skip_if") {
		keyed(idSkipIf, "skip_if")
	}
	if step.has("next") {
		keyed(idNext, "next")
	}
	if step.has("on_fail") {
		keyed(idOnFail, "on_fail")
	}
	// n. inline schemas and output contracts
	if step.has("output_schema") || step.has("output_contract") {
		s.at(idContracts, path, n)
	}
	// o. revise without a round budget
	if step.has("on_revise") && !flowHasMaxRounds {
		keyed(idMissingMaxRounds, "on_revise")
	}
}

// hasTaskDependencies reports whether a decompose step contains, anywhere
// below it, a sequence element that is a mapping with a non-empty depends_on
// sequence. The search never enters a depends_on value, and the step's own
// depends_on does not count. Each node is examined once (aliases can share
// nodes), so the search is linear in the document.
func hasTaskDependencies(step mapping) bool {
	seen := map[*yaml.Node]bool{}
	var search func(n *yaml.Node) bool
	search = func(n *yaml.Node) bool {
		n = resolve(n)
		if n == nil || seen[n] {
			return false
		}
		seen[n] = true
		switch n.Kind {
		case yaml.MappingNode:
			for _, e := range (mapping{n}).entries() {
				if e.name != "depends_on" && search(e.value) {
					return true
				}
			}
		case yaml.SequenceNode:
			for _, el := range n.Content {
				if m, ok := asMapping(el); ok && m.nonEmptySequence("depends_on") {
					return true
				}
				if search(el) {
					return true
				}
			}
		}
		return false
	}
	seen[step.node] = true
	for _, e := range step.entries() {
		if e.name != "depends_on" && search(e.value) {
			return true
		}
	}
	return false
}
