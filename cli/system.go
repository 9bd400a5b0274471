package cli

import (
	"fmt"
	"log/slog"

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
	st, err := openStore(env, log)
	if err != nil {
		return nil, err
	}
	opts := engine.Options{Judge: j, Dispatcher: cfg.dispatcher, DeferDispatch: cfg.dispatcher == nil,
		Evaluator: driver.Shell{}, Workspaces: &driver.GitWorkspaces{CommandTimeout: pol.MaxCommandTimeout()}, Policy: pol}
	return &system{root: st.where, store: st.store, closer: st.close, judge: j, policy: pol, engine: engine.New(st.store, opts), log: log}, nil
}

// Close stops the engine's background work (everything acknowledged stays
// durable).
func (s *system) Close() {
	s.engine.Close()
	s.closer()
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
