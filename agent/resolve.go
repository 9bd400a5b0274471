package agent

import (
	"errors"
	"fmt"
)

// DefaultAgent is the agent of a step that names none.
const DefaultAgent = "claude"

// Resolver maps agent choices to connectors. The zero value resolves
// claude, codex and commands with exec.LookPath and Stratum's own
// environment, and refuses "human".
type Resolver struct {
	// LookPath finds executables; nil means exec.LookPath.
	LookPath func(string) (string, error)
	// Env is the agents' complete environment; nil inherits Stratum's.
	Env []string
	// Human answers "human" steps; nil makes "human" an error.
	Human *Human
}

// Resolve picks the connector for one step. override is the `--agent`
// value, stepAgent the step's `agent:` (empty means [DefaultAgent]).
//
//   - A non-empty override wins for every step. "claude", "codex" and
//     "human" name the built-in connectors; anything else is a command line
//     ([SplitCommandLine]) whose program must exist now.
//   - Otherwise the step's agent must be "claude", "codex" or "human". A
//     step cannot name an arbitrary program: a spec is not trusted to pick
//     what runs on this machine; the person running it chooses with
//     --agent.
//
// The claude and codex CLIs are looked up when a step runs, so a flow that
// never reaches such a step does not need them installed.
func (r *Resolver) Resolve(override, stepAgent string) (Connector, error) {
	if override != "" {
		if c, ok, err := r.builtin(override); ok || err != nil {
			return c, err
		}
		cmd, err := NewCommand(override)
		if err != nil {
			return nil, fmt.Errorf("--agent %q: %w", override, err)
		}
		if _, err := findProgram(cmd.Argv[0], r.LookPath, fmt.Sprintf("--agent %q: program %q not found", override, cmd.Argv[0])); err != nil {
			return nil, err
		}
		cmd.Env, cmd.LookPath = r.Env, r.LookPath
		return cmd, nil
	}
	name := stepAgent
	if name == "" {
		name = DefaultAgent
	}
	c, ok, err := r.builtin(name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: step agent %q has no built-in connector (known: claude, codex, human); pass --agent '<command>' to run a program instead", ErrUnknownAgent, stepAgent)
	}
	return c, nil
}

func (r *Resolver) builtin(name string) (Connector, bool, error) {
	switch name {
	case "claude":
		return &Claude{Env: r.Env, LookPath: r.LookPath}, true, nil
	case "codex":
		return &Codex{Env: r.Env, LookPath: r.LookPath}, true, nil
	case "human":
		if r.Human == nil {
			return nil, true, errors.New("agent human: no terminal is attached to answer human steps")
		}
		return r.Human, true, nil
	}
	return nil, false, nil
}

// TaskRunner returns the runner of free-form tasks for name, "claude" or
// "codex", with the resolver's environment and lookup (the CLI itself is
// looked up when the task runs). Other agents cannot run a free-form task:
// [ErrUnknownAgent].
func (r *Resolver) TaskRunner(name string) (TaskRunner, error) {
	switch name {
	case "claude":
		return &Claude{Env: r.Env, LookPath: r.LookPath}, nil
	case "codex":
		return &Codex{Env: r.Env, LookPath: r.LookPath}, nil
	}
	return nil, fmt.Errorf("%w: %q cannot run a task outside a flow (known: claude, codex)", ErrUnknownAgent, name)
}
