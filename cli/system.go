package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/stratum-go/stratum/driver"
	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/guard"
	"github.com/stratum-go/stratum/judge"
	"github.com/stratum-go/stratum/policy"
	"github.com/stratum-go/stratum/store"
)

// system is the composition root: the store, judge, guard and engine every
// command works with, built in one place from the environment and the
// person's flags. Every command that touches runs gets its engine from
// openSystem, so "stratum run", "stratum mcp", "stratum gate", "stratum
// query" and the rest decide the same question the same way (the same
// judge, the same workspace rules, the same evaluate runner).
//
// What differs between commands is only what the person gave them: a
// dispatcher for the commands that drive runs ("stratum run", "stratum
// mcp"); the others leave engine-dispatched work for the process driving
// the run. The effects policy (docs/policy.md) is built here too, from the
// policy flags the command was given, so that two commands started with
// the same flags allow the same effects in the same roots: the engine
// asks it at plan time and before every command and agent, and the guard
// takes its workspace roots from it.
type system struct {
	// root names the run store: the state root, or a database's DSN
	// without its password (storeopen.go).
	root   string
	store  store.Store
	closer func()
	judge  judge.Judge
	policy *policy.Policy
	engine *engine.Engine
	log    *slog.Logger
}

// systemConfig is what a command adds to the environment's configuration.
type systemConfig struct {
	// dispatcher runs engine-dispatched fanout items; nil leaves them for
	// the process driving the run.
	dispatcher engine.Dispatcher
	// log receives the store's repair notices; nil discards them.
	log *slog.Logger
	// command names the command in the policy's refusals ("stratum
	// run"); empty is "stratum".
	command string
	// mode picks the policy's defaults: policy.Server (the zero value,
	// the strictest) for stratum mcp and the commands that cause no
	// effect, policy.Person for the commands a person types to drive or
	// decide a run.
	mode policy.Mode
	// flags are the policy flags the person gave the command.
	flags policy.Flags
	// agent is the command's --agent value (the agent engine-dispatched
	// items run), for the policy's agents list.
	agent string
}

// newPolicy builds the effects policy of a command. A policy file or an
// --allow-root that cannot be used is a usage error.
func newPolicy(cfg systemConfig) (*policy.Policy, error) {
	command := cfg.command
	if command == "" {
		command = "stratum"
	}
	p, err := policy.New(policy.Options{Command: command, Mode: cfg.mode, Flags: cfg.flags, Agent: cfg.agent})
	if err != nil {
		return nil, usagef("%v", err)
	}
	return p, nil
}

// openSystem builds the composition root. The caller closes it.
func openSystem(env *Env, cfg systemConfig) (*system, error) {
	log := cfg.log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	pol, err := newPolicy(cfg)
	if err != nil {
		return nil, err
	}
	j, err := judge.FromEnv(env.getenv)
	if err != nil {
		return nil, usagef("judge configuration: %v", err)
	}
	if !pol.Judges() {
		j = nil // judged ensures and predicates fail closed, as without a judge
	}
	if cj, ok := j.(*judge.CommandJudge); ok {
		// The judge is a command too: its time limit is bounded by the
		// policy's (docs/policy.md, "The effects").
		effective := cj.Timeout
		if effective == 0 {
			effective = judge.DefaultTimeout
		}
		if limit := pol.MaxCommandTimeout(); limit > 0 && effective > limit {
			cj.Timeout = limit
		}
	}
	st, err := openStore(env, log)
	if err != nil {
		return nil, err
	}
	ttl, err := leaseTTL(env)
	if err != nil {
		st.close()
		return nil, err
	}
	opts := engine.Options{Judge: j, Dispatcher: cfg.dispatcher, DeferDispatch: cfg.dispatcher == nil,
		Evaluator: driver.Shell{}, Workspaces: &driver.GitWorkspaces{CommandTimeout: pol.MaxCommandTimeout()}, Policy: pol,
		LeaseTTL: ttl}
	return &system{root: st.where, store: st.store, closer: st.close, judge: j, policy: pol, engine: engine.New(st.store, opts), log: log}, nil
}

// Close stops the engine's background work (everything acknowledged stays
// durable).
func (s *system) Close() {
	s.engine.Close()
	s.closer()
}

// EnvLeaseTTL overrides the time to live of the run leases a process
// takes to drive runs (docs/mcp.md, "Background flows"): a Go duration
// such as 10s (the default, engine.DefaultLeaseTTL) or 500ms.
const EnvLeaseTTL = "STRATUM_LEASE_TTL"

// EnvAgentsDir overrides where agent runs are recorded (the agent-run
// store; docs/agents.md, "Agent runs for a client"): default
// $STRATUM_HOME/agents, else ~/.stratum/agents.
const EnvAgentsDir = "STRATUM_AGENTS_DIR"

// leaseTTL reads STRATUM_LEASE_TTL (zero when unset).
func leaseTTL(env *Env) (time.Duration, error) {
	v := env.getenv(EnvLeaseTTL)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 10*time.Millisecond {
		return 0, usagef("%s=%q: want a duration of at least 10ms, such as 10s or 500ms", EnvLeaseTTL, v)
	}
	return d, nil
}

// agentsRoot is the directory of the agent-run store.
func agentsRoot(env *Env) (string, error) {
	if d := env.getenv(EnvAgentsDir); d != "" {
		return filepath.Abs(d)
	}
	if h := env.getenv("STRATUM_HOME"); h != "" {
		return filepath.Abs(filepath.Join(h, "agents"))
	}
	home := env.getenv("HOME")
	if home == "" {
		return "", errors.New("agent runs: none of STRATUM_AGENTS_DIR, STRATUM_HOME, HOME is set")
	}
	return filepath.Join(home, ".stratum", "agents"), nil
}

// openAgentRuns opens the agent-run store: every agent a client asked
// for, foreground or detached, is recorded there, so that any process
// polls and cancels it.
func (s *system) openAgentRuns(env *Env, opts driver.AgentRunOptions) (*driver.AgentRuns, error) {
	root, err := agentsRoot(env)
	if err != nil {
		return nil, err
	}
	st, err := store.NewFileStore(root, nil)
	if err != nil {
		return nil, fmt.Errorf("open the agent-run store %s: %w", root, err)
	}
	return driver.NewAgentRuns(st, s.engine, s.policy, opts), nil
}

// openGuard opens the guard store with the system's judge.
func (s *system) openGuard(env *Env) (*guard.Guard, error) {
	root, err := guard.RootFromEnv(env.getenv)
	if err != nil {
		return nil, err
	}
	g, err := guard.New(guard.Options{Root: root, Getenv: env.getenv, Judge: s.judge, AllowedRoots: s.policy.Roots()})
	if err != nil {
		return nil, fmt.Errorf("guard store %s: %w", root, err)
	}
	return g, nil
}
