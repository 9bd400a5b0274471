package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/agent"
	"github.com/stratum-go/stratum/driver"
	"github.com/stratum-go/stratum/judge"
	"github.com/stratum-go/stratum/mcp"
)

// mcpCmd is "stratum mcp": the MCP server over stdio.
type mcpCmd struct {
	logLevel     string
	instructions bool
	agent        string
}

func (*mcpCmd) Name() string     { return "mcp" }
func (*mcpCmd) Synopsis() string { return "[--log-level LEVEL] [--agent CMD] [--instructions]" }
func (*mcpCmd) Short() string {
	return "serve Stratum's tools to an MCP host (Claude Code, Codex) over stdio"
}
func (*mcpCmd) Long() string {
	return `Mcp serves Stratum's tools over the Model Context Protocol on standard
input and output, for an MCP host such as Claude Code or Codex to start:

  claude mcp add stratum -- stratum mcp

Standard output carries nothing but JSON-RPC; logs go to standard error.
The server exits when standard input ends or on SIGINT/SIGTERM.

Runs are kept under $STRATUM_STATE_ROOT when set, else $STRATUM_HOME/flows
(default ~/.stratum/flows); guarded resources under $STRATUM_GUARDS_DIR,
else $STRATUM_HOME/guards. $STRATUM_JUDGE_COMMAND names the program that
decides judged ensures and verified/judged guard predicates (without it
they fail closed). Any number of servers and CLI commands may
share that state: every change to a run happens under the run's lock, and
a run started by one server can be continued by another.

--agent CMD runs the items of engine-dispatched fanouts with an agent
command (claude, codex, or a command line speaking the protocol of
docs/agents.md); without it each item uses its step's agent: (claude or
codex). Steps reported by the MCP client itself are never affected. With
isolation: worktree each item works in its own git worktree and the
changes of the items that succeeded are merged into the workspace when
the fanout settles, as with stratum run.

--instructions prints the guidance the server sends to clients (how an
agent should use the tools) and exits. See docs/mcp.md for every tool.

Exit status: 0 when standard input ends or on SIGINT/SIGTERM (or after
--instructions); 1 when the server cannot start or its transport fails
(the state root or guard store is unusable, ...); 2 for a usage error or
an --agent that cannot run.`
}

func (c *mcpCmd) SetFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.logLevel, "log-level", "info", "`LEVEL` of logs on stderr: debug, info, warn or error")
	fs.BoolVar(&c.instructions, "instructions", false, "print the server instructions and exit")
	fs.StringVar(&c.agent, "agent", "", "agent for engine-dispatched fanout items: claude, codex or a command line `CMD`")
}

func (c *mcpCmd) Run(ctx context.Context, env *Env, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	if c.instructions {
		_, err := io.WriteString(env.Stdout, mcp.Instructions())
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return usagef("--log-level: %q is not one of debug, info, warn, error", c.logLevel)
	}
	// Refuse a bad --agent now rather than at the first fanout.
	if c.agent == "human" {
		return usagef("--agent human cannot be used by the MCP server: its standard input carries JSON-RPC, not a person's answers")
	}
	if err := checkAgentFlag(c.agent); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: level}))
	sys, err := openSystem(env, systemConfig{dispatcher: driver.NewDispatcher(&agent.Resolver{}, c.agent), log: log})
	if err != nil {
		return err
	}
	defer sys.Close()
	if sys.judge == nil {
		log.Info("no judge configured: judged ensures and verified/judged guard predicates fail closed", "set", judge.EnvCommand)
	}
	g, err := sys.openGuard(env)
	if err != nil {
		return err
	}
	eng := sys.engine
	root := sys.root
	srv, err := mcp.NewServer(mcp.Deps{Engine: eng, Guard: g, Version: Version, Logger: log})
	if err != nil {
		return err
	}
	log.Info("stratum mcp serving on stdio", "version", Version, "stateRoot", root)
	err = srv.Run(ctx, mcp.NewStreamTransport(env.Stdin, env.Stdout, log))
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.Is(err, io.EOF), errors.Is(err, sdk.ErrConnectionClosed):
		log.Info("stratum mcp stopped")
		return nil
	}
	return fmt.Errorf("serve: %w", err)
}
