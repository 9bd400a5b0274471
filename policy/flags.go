package policy

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The command-line flags of the policy, shared by every command that
// starts Stratum (docs/policy.md, "Flags"). Their names appear in
// refusals, so they are defined here once.
const (
	FlagPolicy            = "policy"
	FlagAllowCommands     = "allow-commands"
	FlagAllowAgents       = "allow-agents"
	FlagAllowRoot         = "allow-root"
	FlagMaxCommandTimeout = "max-command-timeout"
	FlagMaxAgentTimeout   = "max-agent-timeout"
)

// Flags are the policy flags a person gave one command. A flag that was
// not given leaves the policy file's setting (or the default) in force.
type Flags struct {
	// File is --policy FILE: the policy file, "" for none.
	File string
	// Commands is --allow-commands[=false].
	Commands OptBool
	// Agents is --allow-agents[=false].
	Agents OptBool
	// Roots are the --allow-root DIR values, in order.
	Roots Strings
	// MaxCommandTimeout is --max-command-timeout DURATION.
	MaxCommandTimeout OptDuration
	// MaxAgentTimeout is --max-agent-timeout DURATION.
	MaxAgentTimeout OptDuration
}

// Register defines every policy flag on fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	f.RegisterEffects(fs)
	f.registerRoots(fs)
}

// RegisterEffects defines the flags that decide effects (--policy,
// --allow-commands, --allow-agents, --max-command-timeout,
// --max-agent-timeout), for a command
// that plans no run in a workspace of its own (stratum validate, stratum
// gate).
func (f *Flags) RegisterEffects(fs *flag.FlagSet) {
	f.registerFile(fs)
	fs.Var(&f.Commands, FlagAllowCommands, "allow evaluate steps and fanout pre_merge commands to run (see docs/policy.md)")
	fs.Var(&f.Agents, FlagAllowAgents, "allow engine-dispatched fanouts to start agents (see docs/policy.md)")
	fs.Var(&f.MaxCommandTimeout, FlagMaxCommandTimeout, "the longest time limit `DURATION` a command may have (timeout_ms of evaluate steps; pre_merge) (default 10m)")
	fs.Var(&f.MaxAgentTimeout, FlagMaxAgentTimeout, "the longest time limit `DURATION` an agent attempt may have (default 30m under stratum mcp, none under stratum run)")
}

// RegisterRoots defines only --policy and --allow-root, for a command
// whose only effect is the guard's workspace jail (stratum guard).
func (f *Flags) RegisterRoots(fs *flag.FlagSet) {
	f.registerFile(fs)
	f.registerRoots(fs)
}

func (f *Flags) registerFile(fs *flag.FlagSet) {
	fs.StringVar(&f.File, FlagPolicy, "", "read the effects policy from `FILE` (see docs/policy.md)")
}

func (f *Flags) registerRoots(fs *flag.FlagSet) {
	fs.Var(&f.Roots, FlagAllowRoot, "a directory `DIR` workspace roots may lie inside (repeatable; default: the working directory)")
}

// Given reports whether any policy flag was given.
func (f *Flags) Given() bool {
	return f.File != "" || f.Commands.Given || f.Agents.Given || len(f.Roots) > 0 || f.MaxCommandTimeout.Given || f.MaxAgentTimeout.Given
}

// OptBool is a boolean flag that remembers whether it was given:
// "--allow-commands" sets true, "--allow-commands=false" sets false.
type OptBool struct {
	// Given is set when the flag was given; Value is then its value.
	Given, Value bool
}

func (b *OptBool) String() string {
	if b == nil || !b.Given {
		return ""
	}
	return strconv.FormatBool(b.Value)
}

// Set implements flag.Value.
func (b *OptBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want true or false, not %q", s)
	}
	b.Given, b.Value = true, v
	return nil
}

// IsBoolFlag lets the flag be given without a value.
func (b *OptBool) IsBoolFlag() bool { return true }

// OptDuration is a duration flag that remembers whether it was given.
type OptDuration struct {
	Given bool
	Value time.Duration
}

func (d *OptDuration) String() string {
	if d == nil || !d.Given {
		return ""
	}
	return d.Value.String()
}

// Set implements flag.Value.
func (d *OptDuration) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil || v <= 0 {
		return fmt.Errorf("want a positive duration such as 90s, 10m or 1h, not %q", s)
	}
	d.Given, d.Value = true, v
	return nil
}

// Strings is a repeatable string flag.
type Strings []string

func (s *Strings) String() string { return strings.Join(*s, ",") }

// Set implements flag.Value.
func (s *Strings) Set(v string) error {
	if v == "" {
		return fmt.Errorf("want a directory, not an empty value")
	}
	*s = append(*s, v)
	return nil
}
