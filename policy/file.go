package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/internal/yamlerr"
)

// MaxFileBytes bounds a policy file: a person writes a dozen lines.
const MaxFileBytes = 64 << 10

// Agent names of the policy file's agents list (docs/policy.md): the
// built-in connectors, and any command line the person named with
// --agent.
const (
	AgentClaude  = "claude"
	AgentCodex   = "codex"
	AgentCommand = "command"
)

// File is a parsed policy file. A field left out of the file is nil (the
// command's default, or its flag, decides).
type File struct {
	// Path is the file as the person named it.
	Path string

	Commands    *bool
	AnyAgent    *bool    // agents: true or false
	Agents      []string // agents: [claude, ...]; nil when not a list
	Sandbox     string   // agent_sandbox, "" when absent
	FileReads   *bool
	Judges      *bool
	ClientRoots *bool
	// MaxCommandTimeout is 0 when absent.
	MaxCommandTimeout time.Duration
	// MaxAgentTimeout is 0 when absent.
	MaxAgentTimeout time.Duration
	// Roots are the roots: entries made absolute (relative to the file's
	// directory, ~/ to the home directory); nil when absent.
	Roots []string
	// Steps are the agent options set for single steps (steps:), by
	// step id; nil when absent.
	Steps map[string]StepAgent

	// lines are the line numbers of the keys, for refusals that name the
	// line to change.
	lines map[string]int
}

// Line returns the line of a key in the file, 0 when absent.
func (f *File) Line(key string) int {
	if f == nil {
		return 0
	}
	return f.lines[key]
}

// The keys of a policy file.
const (
	keyVersion           = "version"
	keyCommands          = "commands"
	keyAgents            = "agents"
	keyAgentSandbox      = "agent_sandbox"
	keyMaxCommandTimeout = "max_command_timeout"
	keyMaxAgentTimeout   = "max_agent_timeout"
	keyFileReads         = "file_reads"
	keyJudges            = "judges"
	keyRoots             = "roots"
	keyClientRoots       = "client_roots"
	keySteps             = "steps"
)

var fileKeys = []string{keyVersion, keyCommands, keyAgents, keyAgentSandbox, keyMaxCommandTimeout, keyMaxAgentTimeout,
	keyFileReads, keyJudges, keyRoots, keyClientRoots, keySteps}

// StepAgent is what a policy file sets for the agent of one step (its
// attempts, or its fanout's items): each field set replaces the run's
// own option (a flag) for that step only (docs/policy.md, "Per-step agent
// options"). The agent connector checks the values when a run starts.
type StepAgent struct {
	Model           string
	Effort          string
	Sandbox         string
	PermissionMode  string
	AllowedTools    []string
	DisallowedTools []string
	// Line is where the step's entry is in the file.
	Line int
}

// stepAgentKeys are the settings of a steps: entry.
var stepAgentKeys = []string{"model", "effort", "sandbox", "permission_mode", "allowed_tools", "disallowed_tools"}

// ErrFile is wrapped by every error about a policy file that cannot be
// used (unreadable, not YAML, an unknown key, a wrong value).
var ErrFile = errors.New("unusable policy file")

// fileError is a problem at a position of a policy file.
type fileError struct {
	path       string
	line, col  int
	msg        string
	underlying error
}

func (e *fileError) Error() string {
	switch {
	case e.line > 0 && e.col > 0:
		return fmt.Sprintf("policy file %s:%d:%d: %s", e.path, e.line, e.col, e.msg)
	case e.line > 0:
		return fmt.Sprintf("policy file %s:%d: %s", e.path, e.line, e.msg)
	}
	return fmt.Sprintf("policy file %s: %s", e.path, e.msg)
}

func (e *fileError) Is(target error) bool { return target == ErrFile }
func (e *fileError) Unwrap() error        { return e.underlying }

// LoadFile reads and checks a policy file.
func LoadFile(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &fileError{path: path, msg: "cannot be read: " + err.Error(), underlying: err}
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, &fileError{path: path, msg: "cannot be read: " + err.Error(), underlying: err}
	}
	if len(src) > MaxFileBytes {
		return nil, &fileError{path: path, msg: fmt.Sprintf("is larger than %d bytes; a policy is a few lines", MaxFileBytes)}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &fileError{path: path, msg: err.Error(), underlying: err}
	}
	return ParseFile(path, filepath.Dir(abs), src)
}

// ParseFile checks the text of a policy file named path; relative roots
// are taken from dir.
func ParseFile(path, dir string, src []byte) (*File, error) {
	bad := func(n *yaml.Node, format string, args ...any) error {
		return &fileError{path: path, line: n.Line, col: n.Column, msg: fmt.Sprintf(format, args...)}
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(src))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &fileError{path: path, msg: "is empty; it must be a mapping that starts with version: 1 (docs/policy.md)"}
		}
		p := yamlerr.Locate(src, err)
		msg := "is not valid YAML: " + p.Message
		if p.Hint != "" {
			msg += " (" + p.Hint + ")"
		}
		return nil, &fileError{path: path, line: p.Line, col: p.Column, msg: msg, underlying: err}
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return nil, &fileError{path: path, line: more.Line, msg: "holds more than one YAML document; a policy file is one mapping"}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return nil, bad(root, "must be a mapping of settings (version: 1, commands: ..., see docs/policy.md)")
	}
	f := &File{Path: path, lines: map[string]int{}}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		key := k.Value
		if k.Kind != yaml.ScalarNode || !slices.Contains(fileKeys, key) {
			return nil, bad(k, "unknown setting %q (known: %s)", key, strings.Join(fileKeys, ", "))
		}
		if _, dup := f.lines[key]; dup {
			return nil, bad(k, "%s is set twice (first at line %d)", key, f.lines[key])
		}
		f.lines[key] = k.Line
		if err := f.set(key, v, dir, bad); err != nil {
			return nil, err
		}
	}
	if _, ok := f.lines[keyVersion]; !ok {
		return nil, bad(root, "lacks version: 1 (the first line of a policy file)")
	}
	if f.Sandbox == engine.SandboxReadOnly {
		for id, sa := range f.Steps {
			if sa.Sandbox != "" && sa.Sandbox != engine.SandboxReadOnly {
				return nil, &fileError{path: path, line: sa.Line, msg: fmt.Sprintf(
					"steps: %s: sandbox %s is more than agent_sandbox: %s (line %d) allows", id, sa.Sandbox, f.Sandbox, f.lines[keyAgentSandbox])}
			}
		}
	}
	return f, nil
}

// setSteps decodes steps: a mapping of step ids to agent options.
func (f *File) setSteps(v *yaml.Node, bad func(*yaml.Node, string, ...any) error) error {
	if v.Kind != yaml.MappingNode {
		return bad(v, "steps: want a mapping of step ids to agent options, such as draft: {model: ..., effort: high}")
	}
	f.Steps = map[string]StepAgent{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, m := v.Content[i], v.Content[i+1]
		id := k.Value
		if k.Kind != yaml.ScalarNode || id == "" || strings.ContainsAny(id, " \t\n") {
			return bad(k, "steps: %q is not a step id", id)
		}
		if _, dup := f.Steps[id]; dup {
			return bad(k, "steps: %s is set twice", id)
		}
		if m.Kind != yaml.MappingNode || len(m.Content) == 0 {
			return bad(m, "steps: %s: want agent options (%s)", id, strings.Join(stepAgentKeys, ", "))
		}
		sa := StepAgent{Line: k.Line}
		seen := map[string]bool{}
		for j := 0; j+1 < len(m.Content); j += 2 {
			ok, ov := m.Content[j], m.Content[j+1]
			name := ok.Value
			if ok.Kind != yaml.ScalarNode || !slices.Contains(stepAgentKeys, name) {
				return bad(ok, "steps: %s: unknown agent option %q (known: %s)", id, name, strings.Join(stepAgentKeys, ", "))
			}
			if seen[name] {
				return bad(ok, "steps: %s: %s is set twice", id, name)
			}
			seen[name] = true
			text := func() (string, error) {
				if ov.Kind != yaml.ScalarNode || ov.Tag != "!!str" || ov.Value == "" {
					return "", bad(ov, "steps: %s: %s: want a word such as %q", id, name, map[string]string{
						"model": "claude-sonnet-4-5", "effort": "high", "sandbox": "read-only", "permission_mode": "plan"}[name])
				}
				return ov.Value, nil
			}
			list := func() ([]string, error) {
				if ov.Kind != yaml.SequenceNode {
					return nil, bad(ov, "steps: %s: %s: want a list of tool rules such as [Read, \"Bash(git diff:*)\"]", id, name)
				}
				out := []string{}
				for _, n := range ov.Content {
					if n.Kind != yaml.ScalarNode || n.Value == "" {
						return nil, bad(n, "steps: %s: %s: want a tool rule", id, name)
					}
					out = append(out, n.Value)
				}
				return out, nil
			}
			var err error
			switch name {
			case "model":
				sa.Model, err = text()
			case "effort":
				sa.Effort, err = text()
			case "sandbox":
				if sa.Sandbox, err = text(); err == nil && sa.Sandbox != engine.SandboxReadOnly && sa.Sandbox != engine.SandboxWorkspaceWrite {
					err = bad(ov, "steps: %s: sandbox: want %s or %s, not %q", id, engine.SandboxReadOnly, engine.SandboxWorkspaceWrite, sa.Sandbox)
				}
			case "permission_mode":
				sa.PermissionMode, err = text()
			case "allowed_tools":
				sa.AllowedTools, err = list()
			case "disallowed_tools":
				sa.DisallowedTools, err = list()
			}
			if err != nil {
				return err
			}
		}
		f.Steps[id] = sa
	}
	return nil
}

// set decodes one setting.
func (f *File) set(key string, v *yaml.Node, dir string, bad func(*yaml.Node, string, ...any) error) error {
	boolean := func() (*bool, error) {
		var b bool
		if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" || v.Decode(&b) != nil {
			return nil, bad(v, "%s: want true or false, not %q", key, v.Value)
		}
		return &b, nil
	}
	var err error
	switch key {
	case keyVersion:
		if v.Kind != yaml.ScalarNode || v.Value != "1" {
			return bad(v, "version: want 1 (the only policy format), not %q", v.Value)
		}
	case keyCommands:
		f.Commands, err = boolean()
	case keyFileReads:
		f.FileReads, err = boolean()
	case keyJudges:
		f.Judges, err = boolean()
	case keyClientRoots:
		f.ClientRoots, err = boolean()
	case keyAgents:
		if v.Kind == yaml.ScalarNode {
			f.AnyAgent, err = boolean()
			if err != nil {
				return bad(v, "agents: want true (any agent), false (none) or a list of agents among %s, %s, %s, not %q",
					AgentClaude, AgentCodex, AgentCommand, v.Value)
			}
			return nil
		}
		if v.Kind != yaml.SequenceNode {
			return bad(v, "agents: want true, false or a list such as [claude, codex]")
		}
		f.Agents = []string{}
		for _, n := range v.Content {
			switch n.Value {
			case AgentClaude, AgentCodex, AgentCommand:
				if n.Kind == yaml.ScalarNode && !slices.Contains(f.Agents, n.Value) {
					f.Agents = append(f.Agents, n.Value)
					continue
				}
			}
			return bad(n, "agents: %q is not an agent name; known: %s, %s and %s (any command line given with --agent)",
				n.Value, AgentClaude, AgentCodex, AgentCommand)
		}
	case keyAgentSandbox:
		if v.Kind != yaml.ScalarNode || v.Value != engine.SandboxReadOnly && v.Value != engine.SandboxWorkspaceWrite {
			return bad(v, "agent_sandbox: want %s or %s, not %q", engine.SandboxReadOnly, engine.SandboxWorkspaceWrite, v.Value)
		}
		f.Sandbox = v.Value
	case keyMaxCommandTimeout, keyMaxAgentTimeout:
		d, perr := time.ParseDuration(v.Value)
		if v.Kind != yaml.ScalarNode || perr != nil || d <= 0 {
			return bad(v, "%s: want a positive duration such as 90s, 10m or 1h, not %q", key, v.Value)
		}
		if key == keyMaxAgentTimeout {
			f.MaxAgentTimeout = d
		} else {
			f.MaxCommandTimeout = d
		}
	case keySteps:
		return f.setSteps(v, bad)
	case keyRoots:
		if v.Kind != yaml.SequenceNode {
			return bad(v, "roots: want a list of directories")
		}
		f.Roots = []string{}
		for _, n := range v.Content {
			if n.Kind != yaml.ScalarNode || n.Value == "" {
				return bad(n, "roots: want a directory path")
			}
			p, perr := expandPath(n.Value, dir)
			if perr != nil {
				return bad(n, "roots: %s: %v", n.Value, perr)
			}
			f.Roots = append(f.Roots, p)
		}
	}
	return err
}

// expandPath makes a path of the policy file absolute: ~/ is the home
// directory, a relative path is taken from dir.
func expandPath(p, dir string) (string, error) {
	if p == "~" || strings.HasPrefix(p, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		p = filepath.Join(home, strings.TrimPrefix(p, "~"))
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return filepath.Clean(p), nil
}
