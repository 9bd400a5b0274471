package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/mcp"
	"github.com/stratum-go/stratum/policy"
)

// mcpCmd is "stratum mcp": the MCP server over stdio.
type mcpCmd struct {
	logLevel     string
	instructions bool
	agent        string
	policy       policy.Flags
}

func (*mcpCmd) Name() string { return "mcp" }
func (*mcpCmd) Synopsis() string {
	return "[--allow-commands] [--allow-agents] [--allow-root DIR]... [--policy FILE] [--max-command-timeout D] [--max-agent-timeout D] [--agent CMD] [--log-level LEVEL] [--instructions]"
}
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

What runs may do on this machine is yours to decide, never the spec's
(docs/policy.md). By default the server runs no command (evaluate steps,
fanout pre_merge) and starts no agent (engine-dispatched fanouts): a spec
that needs one is refused at stratum_plan, before anything is created,
with the flag that would allow it. Workspace files may be read and the
judge asked. Turn effects on with:

  --allow-commands          evaluate steps and pre_merge commands run
  --allow-agents            engine fanouts start their agents
  --max-command-timeout D   the longest timeout_ms a command may declare
                            (default 10m); a longer one is refused
  --max-agent-timeout D     the time limit of every agent attempt the
                            server starts (default 30m)
  --policy FILE             a policy file (agents by name, how much they
                            may write, file reads, judges, roots)

  claude mcp add stratum -- stratum mcp --allow-commands --allow-agents

A run's workspaceRoot must be a directory inside the allowed roots: the
server's working directory (not when it is /), each --allow-root DIR, and
the roots the MCP client declares. Anything else ("/", "..", a file, a
path through a symbolic link) is refused at stratum_plan. The guard's
workspace_root must lie inside the same roots (the client's excepted).
The tool annotations follow this policy: with commands or agents on, the
tools that advance runs are not annotated read-only or closed-world.

--agent CMD runs the items of engine-dispatched fanouts with an agent
command (claude, codex, or a command line speaking the protocol of
docs/agents.md); without it each item uses its step's agent: (claude or
codex). Naming the agent does not allow dispatch: --allow-agents does.
Steps reported by the MCP client itself are never affected. With
isolation: worktree each item works in its own git worktree and the
changes of the items that succeeded are merged into the workspace when
the fanout settles, as with stratum run.

--instructions prints the guidance the server sends to clients (how an
agent should use the tools) and exits. See docs/mcp.md for every tool.

Exit status: 0 when standard input ends or on SIGINT/SIGTERM (or after
--instructions); 1 when the server cannot start or its transport fails
(the state root or guard store is unusable, ...); 2 for a usage error, an
--agent that cannot run, or a policy file or --allow-root that cannot be
used.`
}

func (c *mcpCmd) SetFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.logLevel, "log-level", "info", "`LEVEL` of logs on stderr: debug, info, warn or error")
	fs.BoolVar(&c.instructions, "instructions", false, "print the server instructions and exit")
	fs.StringVar(&c.agent, "agent", "", "agent for engine-dispatched fanout items: claude, codex or a command line `CMD`")
	c.policy.Register(fs)
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
	defer floorGC()()
	log := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: level}))
	m, err := openMCPServer(env, mcpServerConfig{command: "stratum mcp", agent: c.agent, flags: c.policy, log: log})
	if err != nil {
		return err
	}
	defer m.Close()
	eng, root, srv, bg := m.sys.engine, m.sys.root, m.srv, m.bg
	// Background runs of the state root that no live server drives are
	// taken over from now on (a restart continues them).
	bg.Supervise()
	log.Info("stratum mcp serving on stdio", "version", Version, "stateRoot", root, "leaseOwner", eng.Owner())
	err = mcp.ServeStream(ctx, srv, env.Stdin, env.Stdout, log)
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.Is(err, io.EOF), errors.Is(err, sdk.ErrConnectionClosed):
		log.Info("stratum mcp stopped")
		return nil
	}
	return fmt.Errorf("serve: %w", err)
}
