package policy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/stratum-go/stratum/engine"
)

// Mode is who is on the other side of the command that starts Stratum;
// it picks the defaults (docs/policy.md, "Defaults").
type Mode int

const (
	// Server: `stratum mcp`. A model drives the runs, so commands and
	// agent dispatch are off until the person allows them.
	Server Mode = iota
	// Person: a command a person types (`stratum run`, `stratum gate`,
	// ...). Agents are on (the person asked for a run with agents);
	// commands are off until --allow-commands.
	Person
)

// DefaultMaxCommandTimeout is the longest time limit a command may have
// unless the person sets another: an evaluate step that declares a
// longer timeout_ms is refused at plan time, and pre_merge commands are
// stopped after it.
const DefaultMaxCommandTimeout = 10 * time.Minute

// DefaultMaxAgentTimeout is the longest time limit an agent attempt may
// have under stratum mcp (Server) unless the person sets another; it is
// the time limit every agent started there gets. A person's own command
// (Person) has no bound by default: --attempt-timeout decides
// (docs/decisions/0200-agent-time-limit-bound.md).
const DefaultMaxAgentTimeout = 30 * time.Minute

// Options are what a command gives New.
type Options struct {
	// Command names the command in refusals ("stratum mcp").
	Command string
	Mode    Mode
	// Flags are the policy flags the person gave (Flags.File is read).
	Flags Flags
	// WorkDir is the working directory: the default root, and the base
	// of relative --allow-root values. Empty means os.Getwd.
	WorkDir string
	// Agent is the --agent value of the command ("" when none): the
	// agent every engine-dispatched item runs instead of its stage's.
	Agent string
}

// Policy is the effects policy of one command. It implements
// engine.Policy and is safe for concurrent use (it never changes).
type Policy struct {
	command string
	mode    Mode
	file    *File
	agent   string // the --agent override

	commands    setting[bool]
	anyAgent    setting[bool]
	agents      []string // the file's list when anyAgent came from it as a list
	sandbox     setting[string]
	fileReads   setting[bool]
	judges      setting[bool]
	clientRoots setting[bool]
	maxTimeout  setting[time.Duration]
	// maxAgent is the longest time limit of an agent attempt, 0 for none.
	maxAgent setting[time.Duration]
	roots    []string // absolute, clean, existing directories
	// rootsNote says where the roots come from, for refusals.
	rootsNote string
}

var _ engine.Policy = (*Policy)(nil)

// origin is where a setting's value comes from.
type origin int

const (
	fromDefault origin = iota
	fromFile
	fromFlag
)

type setting[T any] struct {
	value T
	from  origin
	key   string // the policy file key
	flag  string // the flag that sets it, "" when none
}

// New builds a command's policy from its flags and the policy file they
// name. A flag given on the command line wins over the file; the file
// wins over the command's defaults.
func New(opts Options) (*Policy, error) {
	wd := opts.WorkDir
	if wd == "" {
		var err error
		if wd, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("working directory: %w", err)
		}
	}
	p := &Policy{command: opts.Command, mode: opts.Mode, agent: opts.Agent}
	if p.command == "" {
		p.command = "stratum"
	}
	var f *File
	if opts.Flags.File != "" {
		var err error
		if f, err = LoadFile(opts.Flags.File); err != nil {
			return nil, err
		}
		p.file = f
	}
	p.commands = setting[bool]{value: false, key: keyCommands, flag: FlagAllowCommands}
	p.anyAgent = setting[bool]{value: opts.Mode == Person, key: keyAgents, flag: FlagAllowAgents}
	p.sandbox = setting[string]{value: engine.SandboxWorkspaceWrite, key: keyAgentSandbox}
	p.fileReads = setting[bool]{value: true, key: keyFileReads}
	p.judges = setting[bool]{value: true, key: keyJudges}
	p.clientRoots = setting[bool]{value: true, key: keyClientRoots}
	p.maxTimeout = setting[time.Duration]{value: DefaultMaxCommandTimeout, key: keyMaxCommandTimeout, flag: FlagMaxCommandTimeout}
	p.maxAgent = setting[time.Duration]{key: keyMaxAgentTimeout, flag: FlagMaxAgentTimeout}
	if opts.Mode == Server {
		p.maxAgent.value = DefaultMaxAgentTimeout
	}
	if f != nil {
		fileBool(&p.commands, f.Commands)
		fileBool(&p.fileReads, f.FileReads)
		fileBool(&p.judges, f.Judges)
		fileBool(&p.clientRoots, f.ClientRoots)
		switch {
		case f.Agents != nil:
			p.anyAgent = setting[bool]{value: false, from: fromFile, key: keyAgents, flag: FlagAllowAgents}
			p.agents = f.Agents
		case f.AnyAgent != nil:
			fileBool(&p.anyAgent, f.AnyAgent)
		}
		if f.Sandbox != "" {
			p.sandbox.value, p.sandbox.from = f.Sandbox, fromFile
		}
		if f.MaxCommandTimeout > 0 {
			p.maxTimeout.value, p.maxTimeout.from = f.MaxCommandTimeout, fromFile
		}
		if f.MaxAgentTimeout > 0 {
			p.maxAgent.value, p.maxAgent.from = f.MaxAgentTimeout, fromFile
		}
	}
	flagBool(&p.commands, opts.Flags.Commands)
	if opts.Flags.Agents.Given {
		flagBool(&p.anyAgent, opts.Flags.Agents)
		p.agents = nil
	}
	if d := opts.Flags.MaxCommandTimeout; d.Given {
		p.maxTimeout.value, p.maxTimeout.from = d.Value, fromFlag
	}
	if d := opts.Flags.MaxAgentTimeout; d.Given {
		p.maxAgent.value, p.maxAgent.from = d.Value, fromFlag
	}
	if err := p.setRoots(opts.Flags.Roots, f, wd); err != nil {
		return nil, err
	}
	return p, nil
}

func fileBool(s *setting[bool], v *bool) {
	if v != nil {
		s.value, s.from = *v, fromFile
	}
}

func flagBool(s *setting[bool], v OptBool) {
	if v.Given {
		s.value, s.from = v.Value, fromFlag
	}
}

// setRoots decides the allowed roots: every --allow-root and every
// entry of the file's roots:, else the working directory. The
// filesystem root is never one (it would be no jail at all), and each
// must be an existing directory.
func (p *Policy) setRoots(flags []string, f *File, wd string) error {
	var named []string
	var notes []string
	for _, r := range flags {
		abs := r
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(wd, abs)
		}
		abs = filepath.Clean(abs)
		if err := checkAllowedRoot(abs); err != nil {
			return fmt.Errorf("--%s %s: %w", FlagAllowRoot, r, err)
		}
		named = append(named, abs)
	}
	if len(flags) > 0 {
		notes = append(notes, "--"+FlagAllowRoot)
	}
	if f != nil && f.Roots != nil {
		for _, r := range f.Roots {
			if err := checkAllowedRoot(r); err != nil {
				return &fileError{path: f.Path, line: f.Line(keyRoots), msg: fmt.Sprintf("roots: %s: %v", r, err)}
			}
			named = append(named, r)
		}
		notes = append(notes, fmt.Sprintf("roots: at %s:%d", f.Path, f.Line(keyRoots)))
	}
	if len(named) == 0 {
		wd = filepath.Clean(wd)
		if isFilesystemRoot(wd) {
			p.rootsNote = fmt.Sprintf("none: %s was started in %s, which is not used as a workspace root (it would jail nothing)", p.command, wd)
			return nil
		}
		named = []string{wd}
		notes = []string{fmt.Sprintf("the working directory of %s", p.command)}
	}
	for _, r := range named {
		if !slices.Contains(p.roots, r) {
			p.roots = append(p.roots, r)
		}
	}
	p.rootsNote = strings.Join(notes, " and ")
	return nil
}

// checkAllowedRoot refuses a root the person named that cannot be one.
func checkAllowedRoot(abs string) error {
	if isFilesystemRoot(abs) {
		return errors.New("the filesystem root would jail nothing; name the directories runs may work in")
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return fmt.Errorf("not an existing directory: %w", err)
	}
	if !fi.IsDir() {
		return errors.New("not a directory")
	}
	return nil
}

func isFilesystemRoot(p string) bool {
	return filepath.Dir(p) == p
}

// Roots returns the allowed roots the person named (or the working
// directory), without the MCP client's: what the guard's workspace_root
// must lie inside. It may be empty (started in the filesystem root with
// no root named).
func (p *Policy) Roots() []string { return slices.Clone(p.roots) }

// UsesClientRoots reports whether workspace roots inside the roots an MCP
// client declares are accepted (client_roots in the policy file).
func (p *Policy) UsesClientRoots() bool { return p.clientRoots.value }

// MaxCommandTimeout is the longest time limit a command may have.
func (p *Policy) MaxCommandTimeout() time.Duration { return p.maxTimeout.value }

// MaxAgentTimeout is the longest time limit an agent attempt may have, 0
// when the policy sets none.
func (p *Policy) MaxAgentTimeout() time.Duration {
	if p == nil {
		return 0
	}
	return p.maxAgent.value
}

// AgentTimeout is the time limit of an agent attempt that asks for asked
// (0: no limit): asked, cut to the longest the policy allows. Every agent
// Stratum starts gets its limit from here.
func (p *Policy) AgentTimeout(asked time.Duration) time.Duration {
	bound := p.MaxAgentTimeout()
	if bound > 0 && (asked <= 0 || asked > bound) {
		return bound
	}
	return asked
}

// AgentTimeoutCut says, for the person who asked for an attempt time
// limit with what (a flag such as "--attempt-timeout"), that the policy
// cuts it and where the bound comes from; "" when it is not cut.
func (p *Policy) AgentTimeoutCut(what string, asked time.Duration) string {
	limit := p.AgentTimeout(asked)
	if limit == asked {
		return ""
	}
	shown := asked.String()
	if asked <= 0 {
		shown = "0 (no limit)"
	}
	return fmt.Sprintf("%s %s is over the longest agent time limit, %s (%s): each agent attempt is stopped after %s",
		what, shown, limit, p.where(p.maxAgent), limit)
}

// Commands reports whether commands may run at all.
func (p *Policy) Commands() bool { return p.commands.value }

// Agents reports whether the engine may start any agent at all.
func (p *Policy) Agents() bool { return p.anyAgent.value || len(p.agents) > 0 }

// Judges reports whether judged ensures may ask the judge.
func (p *Policy) Judges() bool { return p.judges.value }

// FileReads reports whether expressions may read workspace files.
func (p *Policy) FileReads() bool { return p.fileReads.value }

// Describe summarises the policy in one line per effect, for a log or a
// person ("commands: off (default of stratum mcp; --allow-commands)").
func (p *Policy) Describe() []string {
	onOff := func(b bool) string {
		if b {
			return "on"
		}
		return "off"
	}
	agents := onOff(p.anyAgent.value)
	if len(p.agents) > 0 {
		agents = "only " + strings.Join(p.agents, ", ")
	}
	agentLimit := "none"
	if p.maxAgent.value > 0 {
		agentLimit = p.maxAgent.value.String()
	}
	roots := strings.Join(p.roots, ", ")
	if roots == "" {
		roots = "none"
	}
	if p.clientRoots.value {
		roots += " (and the MCP client's roots)"
	}
	return []string{
		fmt.Sprintf("commands: %s (%s)", onOff(p.commands.value), p.where(p.commands)),
		fmt.Sprintf("agents: %s, up to %s (%s)", agents, p.sandbox.value, p.where(p.anyAgent)),
		fmt.Sprintf("file reads: %s (%s)", onOff(p.fileReads.value), p.where(p.fileReads)),
		fmt.Sprintf("judges: %s (%s)", onOff(p.judges.value), p.where(p.judges)),
		fmt.Sprintf("longest command time limit: %s (%s)", p.maxTimeout.value, p.where(p.maxTimeout)),
		fmt.Sprintf("longest agent time limit: %s (%s)", agentLimit, p.where(p.maxAgent)),
		fmt.Sprintf("workspace roots: %s", roots),
	}
}

// where says where a setting comes from.
func (p *Policy) where(s originer) string {
	from, key, flag := s.origin()
	switch from {
	case fromFlag:
		return "--" + flag
	case fromFile:
		return fmt.Sprintf("%s at %s:%d", key, p.file.Path, p.file.Line(key))
	}
	return "default of " + p.command
}

// originer is a setting of any type.
type originer interface {
	origin() (origin, string, string)
}

func (s setting[T]) origin() (origin, string, string) { return s.from, s.key, s.flag }

// StepAgent returns the agent options the policy file sets for a step
// (steps:), if it sets any; stepID is the step's scoped id.
func (p *Policy) StepAgent(stepID string) (StepAgent, bool) {
	if p == nil || p.file == nil {
		return StepAgent{}, false
	}
	sa, ok := p.file.Steps[stepID]
	return sa, ok
}

// StepAgentIDs lists the steps the policy file sets agent options for,
// sorted.
func (p *Policy) StepAgentIDs() []string {
	if p == nil || p.file == nil {
		return nil
	}
	ids := make([]string, 0, len(p.file.Steps))
	for id := range p.file.Steps {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// PolicyFile is the policy file's path as the person named it ("" when
// none was given).
func (p *Policy) PolicyFile() string {
	if p == nil || p.file == nil {
		return ""
	}
	return p.file.Path
}
