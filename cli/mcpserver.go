package cli

import (
	"log/slog"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/agent"
	"github.com/stratum-go/stratum/driver"
	"github.com/stratum-go/stratum/guard"
	"github.com/stratum-go/stratum/judge"
	"github.com/stratum-go/stratum/mcp"
	"github.com/stratum-go/stratum/policy"
)

// mcpServer is the MCP server as stratum mcp and stratum serve compose
// it, so that both serve the same tools: one driver, whose dispatcher runs
// engine fanout items and whose loop drives background runs, the store of
// agent runs, the guard, and the policy's effects.
type mcpServer struct {
	sys *system
	srv *sdk.Server
	bg  *driver.Background
	log *slog.Logger

	closers []func()
}

// mcpServerConfig is what differs between the commands that serve MCP.
type mcpServerConfig struct {
	command string // "stratum mcp", "stratum serve"
	agent   string // --agent
	flags   policy.Flags
	log     *slog.Logger
	// noClientRoots refuses the roots clients declare whatever the
	// policy says (stratum serve --public: they name the clients'
	// directories).
	noClientRoots bool
}

// openMCPServer composes the server; the caller starts the supervision of
// background runs (Supervise) once it serves, and closes it.
func openMCPServer(env *Env, cfg mcpServerConfig) (*mcpServer, error) {
	m := &mcpServer{log: cfg.log}
	var sysPolicy *policy.Policy // set once the composition root is open, before any agent starts
	d := driver.New(driver.Options{Agent: cfg.agent, Resolver: &agent.Resolver{}, Gates: driver.GateStop, By: cfg.command,
		// No time limit of their own: each attempt gets the policy's
		// bound (max_agent_timeout, 30m by default) in stepAgentOptions.
		Agents: driver.AgentSetup{ForStep: stepAgentOptions(func() *policy.Policy { return sysPolicy })}})
	sys, err := openSystem(env, systemConfig{dispatcher: d.Dispatcher(), log: cfg.log,
		command: cfg.command, mode: policy.Server, flags: cfg.flags, agent: cfg.agent})
	if err != nil {
		return nil, err
	}
	m.sys, sysPolicy = sys, sys.policy
	m.closers = append(m.closers, sys.Close)
	agents, err := sys.openAgentRuns(env, driver.AgentRunOptions{Timeout: sys.policy.AgentTimeout(0), Log: cfg.log})
	if err != nil {
		m.Close()
		return nil, err
	}
	m.closers = append(m.closers, agents.Close)
	m.bg = driver.NewBackground(d, sys.engine, driver.BackgroundOptions{Log: cfg.log})
	m.closers = append(m.closers, m.bg.Close)
	for _, line := range sys.policy.Describe() {
		cfg.log.Info("policy: " + line)
	}
	if sys.judge == nil {
		cfg.log.Info("no judge configured: judged ensures and verified/judged guard predicates fail closed", "set", judge.EnvCommand)
	}
	g, err := sys.openGuard(env)
	if err != nil {
		m.Close()
		return nil, err
	}
	effects := mcp.Effects{Commands: sys.policy.Commands(), Agents: sys.policy.Agents(), Judge: sys.judge != nil,
		GuardCommands: env.getenv(guard.EnvAllowCommands) == "1"}
	m.srv, err = mcp.NewServer(mcp.Deps{Engine: sys.engine, Guard: g, Version: Version, Logger: cfg.log,
		Effects: effects, ClientRoots: sys.policy.UsesClientRoots() && !cfg.noClientRoots, Background: m.bg, Agents: agents})
	if err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// Close stops the background runs, the agent runs and the engine, in
// that order.
func (m *mcpServer) Close() {
	for i := len(m.closers) - 1; i >= 0; i-- {
		m.closers[i]()
	}
	m.closers = nil
}
