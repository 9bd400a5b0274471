package speckit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/stratum-go/stratum/ir"
)

// DefaultFlowName is the flow name used when none is given.
const DefaultFlowName = "tasks"

// ErrorType classifies a compile failure. The values are the error_type
// strings of the MCP tool.
type ErrorType string

// The compile failures.
const (
	// DirectoryNotFound: the tasks directory is missing or not a directory.
	DirectoryNotFound ErrorType = "directory_not_found"
	// NoTasks: the directory holds no *.md file.
	NoTasks ErrorType = "no_tasks"
	// StepIDCollision: two file names give the same step id.
	StepIDCollision ErrorType = "step_id_collision"
	// CompileFailed: anything else (an unreadable task file, a reserved
	// flow name, a generated spec that does not validate).
	CompileFailed ErrorType = "compile_error"
)

// Error is a compile failure. Callers branch on its [ErrorType]
// (errors.As).
type Error struct {
	Type    ErrorType
	Message string
	// Err is the underlying cause, if any (an *fs.PathError, or the
	// ir.Diagnostics of a generated spec that does not validate).
	Err error
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Err }

// Result is a compiled tasks directory ([Compile]).
type Result struct {
	// YAML is the v1 spec. It validates with ir.Build.
	YAML []byte
	// FlowName is the name of the (entry) flow holding the tasks.
	FlowName string
	// Tasks are the parsed tasks in file order, with their dependencies.
	Tasks []Task
}

// MaxTaskFileBytes bounds one task file: larger files are refused, since the
// spec they would produce is over ir's size limit anyway.
const MaxTaskFileBytes = ir.MaxSpecBytes

// Compile reads the *.md task files directly inside dir, in file-name order,
// and compiles them into a v1 spec whose entry flow is called flowName
// ([DefaultFlowName] when empty). Failures are [*Error] values.
func Compile(ctx context.Context, dir, flowName string) (*Result, error) {
	info, err := os.Stat(dir)
	if err != nil || !info.IsDir() {
		return nil, &Error{Type: DirectoryNotFound, Message: fmt.Sprintf("tasks_dir '%s' is not a directory", dir), Err: err}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, &Error{Type: CompileFailed, Message: fmt.Sprintf("read tasks directory: %v", err), Err: err}
	}
	var files []source
	for _, e := range entries { // ReadDir sorts by name
		if !strings.HasSuffix(e.Name(), ".md") {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, &Error{Type: CompileFailed, Message: err.Error(), Err: err}
		}
		text, err := readTaskFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, &Error{Type: CompileFailed, Message: err.Error(), Err: err}
		}
		files = append(files, source{name: e.Name(), text: text})
	}
	if len(files) == 0 {
		return nil, &Error{Type: NoTasks, Message: fmt.Sprintf("No task files (*.md) found in %s", dir)}
	}
	return compileSources(files, flowName)
}

// source is one task file's name and text.
type source struct {
	name, text string
}

// readTaskFile reads a regular file of bounded size. The type is checked
// before opening because opening a FIFO for reading blocks until a writer
// comes, and again on the open file in case it was replaced meanwhile.
func readTaskFile(path string) (string, error) {
	if info, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("read task file: %w", err)
	} else if err := checkRegular(path, info); err != nil {
		return "", err
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("read task file: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("read task file: %w", err)
	}
	if err := checkRegular(path, info); err != nil {
		return "", err
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxTaskFileBytes+1))
	if err != nil {
		return "", fmt.Errorf("read task file: %w", err)
	}
	if len(data) > MaxTaskFileBytes {
		return "", fmt.Errorf("read task file %s: larger than %d MiB", path, MaxTaskFileBytes>>20)
	}
	return string(data), nil
}

func checkRegular(path string, info os.FileInfo) error {
	if info.Mode().IsRegular() {
		return nil
	}
	kind := "not a regular file"
	if info.IsDir() {
		kind = "a directory"
	}
	return fmt.Errorf("read task file %s: it is %s", path, kind)
}

// compileSources is Compile after the files are read: pure, so it can be
// fuzzed.
func compileSources(files []source, flowName string) (*Result, error) {
	if flowName == "" {
		flowName = DefaultFlowName
	}
	tasks := make([]Task, len(files))
	firstFile := map[string]string{} // step id -> file that produced it
	for i, f := range files {
		tasks[i] = ParseTask(f.name, f.text)
		id := tasks[i].ID
		if earlier, dup := firstFile[id]; dup {
			return nil, &Error{Type: StepIDCollision, Message: fmt.Sprintf(
				"task file '%s' gives step id '%s', already used by task file '%s'; rename one of the two files", f.name, id, earlier)}
		}
		firstFile[id] = f.name
	}
	// The reserved name is checked after the step ids: a collision is
	// reported first (docs/speckit.md, "Errors").
	if flowName == "entry" {
		return nil, &Error{Type: CompileFailed, Message: `flow_name 'entry' is reserved: in a v1 spec the key "flows.entry" names the entry flow; choose another name`}
	}
	linkDependencies(tasks)

	src, err := emit(tasks, flowName)
	if err != nil {
		return nil, &Error{Type: CompileFailed, Message: fmt.Sprintf("encode spec: %v", err), Err: err}
	}
	if diags := ir.Validate(src); len(diags) > 0 {
		return nil, invalidSpecError(diags, tasks, flowName)
	}
	if err := checkRoundTrip(src, tasks, flowName); err != nil {
		return nil, &Error{Type: CompileFailed, Message: err.Error(), Err: err}
	}
	return &Result{YAML: src, FlowName: flowName, Tasks: tasks}, nil
}

// linkDependencies applies the ordering rules: a sequential task waits for
// the parallel group before it (all of it) or else for the previous
// sequential task; a [P] task waits for the last sequential task and joins
// the current group.
func linkDependencies(tasks []Task) {
	lastSequential := ""
	var group []string
	for i := range tasks {
		t := &tasks[i]
		switch {
		case t.Parallel:
			if lastSequential != "" {
				t.After = []string{lastSequential}
			}
			group = append(group, t.ID)
		case len(group) > 0:
			t.After = group
			group = nil
			lastSequential = t.ID
		default:
			if lastSequential != "" {
				t.After = []string{lastSequential}
			}
			lastSequential = t.ID
		}
	}
}

// doText is the task text an agent receives: the title, the description,
// and the criteria that need judgment.
func doText(t Task) string {
	lines := []string{t.Title}
	if t.Description != "" {
		lines = append(lines, t.Description)
	}
	if len(t.Judgment) > 0 {
		lines = append(lines, "Also verify: "+strings.Join(t.Judgment, "; "))
	}
	return strings.Join(lines, "\n")
}

// YAML node builders. The document is built node by node so that key order
// and therefore the bytes are fixed.
//
// str picks the style of a string scalar: yaml.v3's own choice when that
// reads back as the same string, else double quotes. (yaml.v3 v3.0.1 emits
// a literal block that loses a leading newline, and one that is invalid
// when a line starts with a tab.) Words that YAML 1.1 readers take for
// booleans are quoted too, so that the spec means the same to any reader.
func str(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	if yaml11Bool[s] || !readsBack(n) {
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

var yaml11Bool = map[string]bool{
	"y": true, "Y": true, "yes": true, "Yes": true, "YES": true,
	"n": true, "N": true, "no": true, "No": true, "NO": true,
	"on": true, "On": true, "ON": true, "off": true, "Off": true, "OFF": true,
}

// readsBack reports whether a string scalar, encoded as a mapping value,
// decodes to the same string.
func readsBack(n *yaml.Node) bool {
	doc := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: "k"}, n}}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return false
	}
	var back struct {
		K *string `yaml:"k"`
	}
	return yaml.Unmarshal(out, &back) == nil && back.K != nil && *back.K == n.Value
}
func num(i int) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(i)}
}

func mapping(kv ...any) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i < len(kv); i += 2 {
		v := kv[i+1].(*yaml.Node)
		n.Content = append(n.Content, str(kv[i].(string)), v)
	}
	return n
}

func sequence(items ...*yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.SequenceNode, Content: items}
}

func predicateNode(p Predicate) *yaml.Node {
	switch {
	case p.FileExists != "":
		return mapping("file_exists", str(p.FileExists))
	case p.FileContains != nil:
		return mapping("file_contains", mapping("path", str(p.FileContains.Path), "text", str(p.FileContains.Text)))
	}
	return mapping("expr", str(p.Expr))
}

// emit writes the v1 document (docs/speckit.md, "The generated spec").
func emit(tasks []Task, flowName string) ([]byte, error) {
	steps := sequence()
	for _, t := range tasks {
		ensure := sequence()
		for _, p := range t.Ensures {
			ensure.Content = append(ensure.Content, predicateNode(p))
		}
		ensure.Content = append(ensure.Content, predicateNode(Predicate{Expr: doneExpr}))
		step := mapping(
			"id", str(t.ID),
			"do", str(doText(t)),
			"out", str("TaskResult"),
			"ensure", ensure,
			"attempts", num(3),
		)
		if len(t.After) > 0 {
			after := sequence()
			for _, a := range t.After {
				after.Content = append(after.Content, str(a))
			}
			step.Content = append(step.Content, str("after"), after)
		}
		steps.Content = append(steps.Content, step)
	}
	last := tasks[len(tasks)-1].ID
	doc := mapping(
		"version", num(1),
		"contracts", mapping(
			"TaskResult", mapping(
				"done", str("boolean"),
				"tests_pass", str("boolean?"),
				"lint_clean", str("boolean?"),
			),
		),
		"flows", mapping(
			"entry", str(flowName),
			flowName, mapping(
				"input", mapping("project_context", str("string")),
				"output", mapping("from", str("${"+last+".output}"), "contract", str("TaskResult")),
				"steps", steps,
			),
		),
	)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// invalidSpecError explains why the generated spec does not validate. The
// usual cause is "${...}" in a task's text: every ${...} in v1 task text is
// a reference and there is no escape.
func invalidSpecError(diags ir.Diagnostics, tasks []Task, flowName string) *Error {
	d := diags[0]
	where := ""
	prefix := "flows." + flowName + ".steps["
	if rest, ok := strings.CutPrefix(d.Path, prefix); ok {
		if i := strings.IndexByte(rest, ']'); i > 0 {
			if n, err := strconv.Atoi(rest[:i]); err == nil && n >= 0 && n < len(tasks) {
				where = fmt.Sprintf(" (task file '%s')", tasks[n].File)
			}
		}
	}
	msg := fmt.Sprintf("the generated spec does not validate: %s at %s%s: %s. "+
		"Task text may not contain ${...}: in a v1 spec every ${...} in a task's text is a reference to a step output or flow input and cannot be escaped; reword it (for example write $HOME instead of ${HOME})",
		d.Code, displayPath(d.Path), where, d.Message)
	return &Error{Type: CompileFailed, Message: msg, Err: diags}
}

func displayPath(p string) string {
	if p == "" {
		return "the document root"
	}
	return p
}

// errRoundTrip reports a generated spec that validates but does not say
// what the tasks say: a defect of the encoder, never of the input.
var errRoundTrip = errors.New("internal error: the generated spec does not read back as written")

// readBack is the part of the emitted document the round trip compares.
type readBack struct {
	Flows map[string]yaml.Node `yaml:"flows"`
}

type readBackFlow struct {
	Steps []readBackStep `yaml:"steps"`
}

type readBackStep struct {
	ID       string      `yaml:"id"`
	Do       string      `yaml:"do"`
	Out      string      `yaml:"out"`
	Ensure   []Predicate `yaml:"ensure"`
	Attempts int         `yaml:"attempts"`
	After    []string    `yaml:"after"`
}

// checkRoundTrip decodes the emitted YAML and compares it with the tasks it
// came from, so that no quoting or block-scalar subtlety of the encoder can
// change a task's text unnoticed. (ir has already checked the types.)
func checkRoundTrip(src []byte, tasks []Task, flowName string) error {
	var doc readBack
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return fmt.Errorf("%w: %v", errRoundTrip, err)
	}
	node, ok := doc.Flows[flowName]
	if !ok {
		return fmt.Errorf("%w: no flow %q", errRoundTrip, flowName)
	}
	var flow readBackFlow
	if err := node.Decode(&flow); err != nil {
		return fmt.Errorf("%w: %v", errRoundTrip, err)
	}
	if len(flow.Steps) != len(tasks) {
		return fmt.Errorf("%w: %d steps for %d tasks", errRoundTrip, len(flow.Steps), len(tasks))
	}
	for i, t := range tasks {
		s := flow.Steps[i]
		want := append(slices.Clone(t.Ensures), Predicate{Expr: doneExpr})
		if s.ID != t.ID || s.Do != doText(t) || s.Out != "TaskResult" || s.Attempts != 3 ||
			!slices.Equal(s.After, t.After) || !slices.EqualFunc(s.Ensure, want, samePredicate) {
			return fmt.Errorf("%w: step %s", errRoundTrip, t.ID)
		}
	}
	return nil
}

func samePredicate(a, b Predicate) bool {
	if (a.FileContains == nil) != (b.FileContains == nil) {
		return false
	}
	if a.FileContains != nil && *a.FileContains != *b.FileContains {
		return false
	}
	return a.Expr == b.Expr && a.FileExists == b.FileExists
}
