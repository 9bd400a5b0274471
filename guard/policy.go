package guard

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/stratum-go/stratum/guard/internal/canon"
	"github.com/stratum-go/stratum/guard/internal/evidence"
)

// Predicate types.
const (
	TypeDeterministic = "deterministic"
	TypeVerified      = "verified"
	TypeJudged        = "judged"
)

// StakeParanoid is the one stake the guard itself enforces: such an edge
// must carry at least one deterministic predicate.
const StakeParanoid = "paranoid"

// PolicyInput is a policy as submitted: graph, edge predicates, terminal
// states and stakes as raw JSON values, so that shape errors are reported
// in the documented order and every extra key of a predicate is hashed as
// given. Nil Terminal and Stakes mean [] and {}.
type PolicyInput struct {
	Graph          map[string]any
	EdgePredicates map[string]any
	Terminal       any
	Stakes         any
}

// policy is a validated policy.
type policy struct {
	Graph          map[string][]string
	EdgePredicates map[string][]map[string]any
	Terminal       []string
	Stakes         map[string]string
}

// EdgeKey is the literal "from->to" key of an edge.
func EdgeKey(from, to string) string { return from + "->" + to }

// checksum is sha256 over canonical {graph, edge_predicates, terminal
// (sorted), stakes}: the reference's policy checksum, which signatures,
// descriptors and payload digests name. initial and workspace_root are
// outside it (as in the reference) and protected by the registry seal
// instead (seal.go).
func (p *policy) checksum() (string, error) {
	terminal := slices.Clone(p.Terminal)
	slices.Sort(terminal) // byte order = code point order
	b, err := canon.Marshal(map[string]any{
		"graph":           p.Graph,
		"edge_predicates": p.EdgePredicates,
		"terminal":        terminal,
		"stakes":          p.Stakes,
	})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// hasEdge is edge legality: graph[from] is declared and holds to, by exact
// string equality.
func (p *policy) hasEdge(from, to string) bool {
	targets, ok := p.Graph[from]
	return ok && slices.Contains(targets, to)
}

// isNode reports whether s is a graph key or a terminal state.
func (p *policy) isNode(s string) bool {
	_, ok := p.Graph[s]
	return ok || slices.Contains(p.Terminal, s)
}

func (p *policy) stake(edge string) string {
	if s, ok := p.Stakes[edge]; ok {
		return s
	}
	return "default"
}

var reservedNames = map[string]bool{"__proto__": true, "constructor": true, "prototype": true}

func validStateName(s string) bool {
	if s == "" || reservedNames[s] {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// validateResourceID: non-empty, valid UTF-8, no NUL, not "." or "..". The
// id never becomes a path component itself (the directory is its hash).
func validateResourceID(id string) error {
	switch {
	case id == "":
		return errorf(CodeInvalidArgument, "resource_id must be a non-empty string")
	case id == "." || id == "..":
		return errorf(CodeInvalidArgument, "resource_id must not be %q", id)
	case strings.IndexByte(id, 0) >= 0:
		return errorf(CodeInvalidArgument, "resource_id must not contain NUL")
	case !utf8.ValidString(id):
		return errorf(CodeInvalidArgument, "resource_id is not valid UTF-8")
	}
	return nil
}

// predicateType resolves a predicate's tier: no "type" key means
// deterministic; anything but the three known strings is an error.
func predicateType(p map[string]any) (string, error) {
	t, ok := p["type"]
	if !ok {
		return TypeDeterministic, nil
	}
	if s, isStr := t.(string); isStr {
		switch s {
		case TypeDeterministic, TypeVerified, TypeJudged:
			return s, nil
		}
	}
	return "", errorf(CodeEvidenceParseError, "unknown predicate type %s (want deterministic, verified or judged)", jsString(t))
}

// jsString renders a JSON value the way the reference stringified a bad
// type (null -> "null").
func jsString(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("%q", x)
	}
	b, err := canon.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}

// statementOf returns a predicate's statement; a non-string statement
// reads as "" (and so fails to parse when it must).
func statementOf(p map[string]any) string {
	s, _ := p["statement"].(string)
	return s
}

// validation options.
type validation struct {
	initial       string
	workspaceRoot *string
	allowCommands bool
	// jail, when set, checks a workspace root in full (absolute, an
	// existing directory, inside the allowed roots: Guard.checkWorkspaceRoot);
	// registration sets it, policy changes keep the reference's checks of
	// the stored root.
	jail func(root string) error
	// stored: validating a policy read back from registry.json, where only
	// the structure matters (steps 1-8); environment and workspace checks
	// belong to the moment a policy is accepted.
	stored bool
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func stringList(v any) ([]string, bool) {
	switch x := v.(type) {
	case []string:
		return x, true
	case []any:
		out := make([]string, len(x))
		for i, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out[i] = s
		}
		return out, true
	}
	return nil, false
}

// stakesMap reads the stakes value: nil is {}, otherwise it must be an
// object.
func stakesMap(v any) (map[string]any, bool) {
	switch x := v.(type) {
	case nil:
		return map[string]any{}, true
	case map[string]any:
		return x, true
	case map[string]string:
		m := make(map[string]any, len(x))
		for k, s := range x {
			m[k] = s
		}
		return m, true
	}
	return nil, false
}

// validatePolicy checks a policy in the order of docs/guard.md,
// "Validation order" (the first failure wins) and returns it typed.
func validatePolicy(in PolicyInput, v validation) (*policy, error) {
	p := &policy{
		Graph:          make(map[string][]string, len(in.Graph)),
		EdgePredicates: make(map[string][]map[string]any, len(in.EdgePredicates)),
		Stakes:         map[string]string{},
	}
	// 1-2. terminal: an array of distinct strings.
	if in.Terminal == nil {
		p.Terminal = []string{}
	} else {
		t, ok := stringList(in.Terminal)
		if !ok {
			return nil, errorf(CodeInvalidStateName, "terminal must be an array of state names")
		}
		seen := map[string]bool{}
		for _, s := range t {
			if seen[s] {
				return nil, errorf(CodeInvalidStateName, "terminal lists %q more than once", s)
			}
			seen[s] = true
		}
		p.Terminal = slices.Clone(t)
	}
	// 3. graph values: arrays of strings.
	for _, k := range sortedKeys(in.Graph) {
		targets, ok := stringList(in.Graph[k])
		if !ok {
			return nil, errorf(CodeInvalidStateName, "graph[%q] must be an array of state names", k)
		}
		p.Graph[k] = slices.Clone(targets)
	}
	// 4. edge_predicates values: arrays of objects.
	for _, k := range sortedKeys(in.EdgePredicates) {
		list, ok := in.EdgePredicates[k].([]any)
		if !ok {
			if typed, isTyped := in.EdgePredicates[k].([]map[string]any); isTyped {
				p.EdgePredicates[k] = typed
				continue
			}
			return nil, errorf(CodeEvidenceParseError, "edge_predicates[%q] must be an array of predicate objects", k)
		}
		preds := make([]map[string]any, len(list))
		for i, item := range list {
			obj, ok := item.(map[string]any)
			if !ok {
				return nil, errorf(CodeEvidenceParseError, "edge_predicates[%q][%d] must be a predicate object", k, i)
			}
			preds[i] = obj
		}
		p.EdgePredicates[k] = preds
	}
	// 5. stakes values: strings.
	stakes, ok := stakesMap(in.Stakes)
	if !ok {
		return nil, errorf(CodeInvalidStateName, "stakes must be an object of \"from->to\": stake")
	}
	for _, k := range sortedKeys(stakes) {
		s, ok := stakes[k].(string)
		if !ok {
			return nil, errorf(CodeInvalidStateName, "stakes[%q] must be a string", k)
		}
		p.Stakes[k] = s
	}
	// 6. every state name well formed.
	names := []string{v.initial}
	names = append(names, p.Terminal...)
	for _, k := range sortedKeys(p.Graph) {
		names = append(names, k)
		names = append(names, p.Graph[k]...)
	}
	for _, n := range names {
		if !validStateName(n) {
			return nil, errorf(CodeInvalidStateName, "invalid state name %q (want [A-Za-z0-9_.-]+, not __proto__/constructor/prototype)", n)
		}
	}
	// 7. initial is a graph key or terminal.
	if !p.isNode(v.initial) {
		return nil, errorf(CodeInvalidStateName, "initial state %q must be a graph key or a terminal state", v.initial)
	}
	// 8. predicate types and trusted statements.
	usesCommands, needsWorkspace := false, false
	for _, k := range sortedKeys(p.EdgePredicates) {
		for i, pred := range p.EdgePredicates[k] {
			typ, err := predicateType(pred)
			if err != nil {
				err.(*Error).Message = fmt.Sprintf("edge_predicates[%q][%d]: %s", k, i, err.(*Error).Message)
				return nil, err
			}
			if typ != TypeDeterministic {
				continue
			}
			call, perr := evidence.Parse(statementOf(pred))
			if perr != nil {
				return nil, errorf(CodeEvidenceParseError, "edge_predicates[%q][%d]: %v", k, i, perr)
			}
			usesCommands = usesCommands || call.Name == evidence.CommandExitZero
			needsWorkspace = needsWorkspace || evidence.NeedsWorkspace(call.Name)
		}
	}
	if v.stored {
		return p, nil
	}
	// 9. commands need the server's opt-in.
	if usesCommands && !v.allowCommands {
		return nil, errorf(CodeCommandExecutionDisabled, "command_exit_zero predicates need STRATUM_GUARD_ALLOW_COMMANDS=1 in the server environment")
	}
	// 10-11. workspace root.
	root := ""
	if v.workspaceRoot != nil {
		root = *v.workspaceRoot
	}
	if needsWorkspace && root == "" {
		return nil, errorf(CodeInvalidWorkspaceRoot, "file, git and command evidence needs a workspace_root")
	}
	if root != "" {
		if v.jail != nil {
			if err := v.jail(root); err != nil {
				return nil, err
			}
		} else if !filepath.IsAbs(root) {
			return nil, errorf(CodeInvalidWorkspaceRoot, "workspace_root %q is not an absolute path", root)
		} else if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
			return nil, errorf(CodeInvalidWorkspaceRoot, "workspace_root %q is not an existing directory", root)
		}
	}
	// 12. paranoid edges carry trusted evidence. Unlike the reference, a
	// paranoid stake on an edge with no edge_predicates entry is refused
	// too (otherwise that edge would be unguarded).
	for _, k := range sortedKeys(p.Stakes) {
		if p.Stakes[k] != StakeParanoid {
			continue
		}
		trusted := false
		for _, pred := range p.EdgePredicates[k] {
			if t, _ := predicateType(pred); t == TypeDeterministic {
				trusted = true
				break
			}
		}
		if !trusted {
			return nil, errorf(CodeParanoidNeedsTrustedEvidence, "edge %q is paranoid but has no deterministic predicate", k)
		}
	}
	return p, nil
}

// policyChecksum validates nothing: it canonicalises and hashes, mapping a
// value with no canonical form to evidence_parse_error (the only free-form
// values of a validated policy are predicate objects).
func policyChecksum(p *policy) (string, error) {
	sum, err := p.checksum()
	if err != nil {
		return "", errorf(CodeEvidenceParseError, "policy has no canonical JSON form: %v", err)
	}
	return sum, nil
}
