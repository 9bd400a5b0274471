package cli

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/policy"
	"github.com/stratum-go/stratum/web"
)

// serveCmd is "stratum serve": the web view of runs and gates and the MCP
// tools over streamable HTTP, from one engine (docs/serve.md).
type serveCmd struct {
	addr      string
	public    bool
	tokenFile string
	hosts     multiFlag
	logLevel  string
	agent     string
	policy    policy.Flags
}

// defaultServeAddr is where stratum serve listens unless told otherwise.
const defaultServeAddr = "127.0.0.1:8700"

func (*serveCmd) Name() string { return "serve" }
func (*serveCmd) Synopsis() string {
	return "[--addr HOST:PORT] [--public] [--token-file FILE] [--allow-host NAME]... [--allow-commands] [--allow-agents] [--allow-root DIR]... [--policy FILE] [--max-command-timeout D] [--max-agent-timeout D] [--agent CMD] [--log-level LEVEL]"
}
func (*serveCmd) Short() string {
	return "serve a web view of runs and gates, and the MCP tools over HTTP"
}
func (*serveCmd) Long() string {
	return `Serve starts one HTTP server over the same run store as every other
command: a web view of the runs (their step graphs, steps, attempts,
outputs, spend, event logs and whether each hash chain verifies, updated
live), a page of the gates waiting on a person (what is under review, its
digest, approve / revise / kill with a note), and the MCP tools of
"stratum mcp" at /mcp over the streamable HTTP transport.

  stratum serve
  stratum serve --addr 127.0.0.1:9000 --token-file ~/.config/stratum/token

It listens on 127.0.0.1:8700 by default. A non-loopback --addr (another
interface, or all of them with ":PORT") needs --public as well. Every
request needs the server's token: a random one is made at each start and
printed with an address to open (http://HOST:PORT/?token=..., which sets a
session cookie), or --token-file FILE names a file holding yours (at least
16 characters). MCP clients send it as "Authorization: Bearer TOKEN":

  claude mcp add --transport http stratum http://127.0.0.1:8700/mcp \
      --header "Authorization: Bearer TOKEN"

Requests addressed to a host name other than localhost (or an IP address)
are refused, against DNS rebinding: name the host names clients use with
--allow-host NAME. Decisions from another site's page are refused.

A decision on a page is fenced by the gate token and the digest of what
the page showed: if the gate moved on (a new round, or someone decided
it), the decision is refused and the page shows what is under review now.
The decider's name is recorded with the note.

What runs may do is decided as for "stratum mcp" (docs/policy.md): no
command and no agent unless --allow-commands / --allow-agents (or a policy
file) allow them; --agent CMD runs engine-dispatched fanout items. With
--public the roots MCP clients declare are not accepted as workspace
roots (they name directories of the client's machine): use --allow-root.

Exit status: 0 on SIGINT/SIGTERM; 1 when the server cannot start (the
address is taken, the state root is unusable); 2 for a usage error (a
non-loopback address without --public, an unreadable or short token
file, a policy file or --allow-root that cannot be used).`
}

func (c *serveCmd) SetFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.addr, "addr", defaultServeAddr, "listen on `ADDR`, as HOST:PORT (port 0 picks a free one)")
	fs.BoolVar(&c.public, "public", false, "allow an --addr that is not a loopback address")
	fs.StringVar(&c.tokenFile, "token-file", "", "read the access token from `FILE` instead of making one")
	fs.Var(&c.hosts, "allow-host", "a host `NAME` clients may address the server by, besides localhost and IP addresses (repeatable)")
	fs.StringVar(&c.logLevel, "log-level", "info", "`LEVEL` of logs on stderr: debug, info, warn or error")
	fs.StringVar(&c.agent, "agent", "", "agent for engine-dispatched fanout items: claude, codex or a command line `CMD`")
	c.policy.Register(fs)
}

func (c *serveCmd) Run(ctx context.Context, env *Env, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return usagef("--log-level: %q is not one of debug, info, warn, error", c.logLevel)
	}
	if err := checkServeAddr(c.addr, c.public); err != nil {
		return err
	}
	if c.agent == "human" {
		return usagef("--agent human cannot be used by the server: nobody answers at its terminal")
	}
	if err := checkAgentFlag(c.agent); err != nil {
		return err
	}
	token := web.NewToken()
	if c.tokenFile != "" {
		t, err := readTokenFile(env, c.tokenFile)
		if err != nil {
			return err
		}
		token = t
	}
	defer floorGC()()
	log := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: level}))
	// Composed as stratum mcp composes its server (openMCPServer), so that
	// /mcp has the same tools.
	m, err := openMCPServer(env, mcpServerConfig{command: "stratum serve", agent: c.agent, flags: c.policy, log: log, noClientRoots: c.public})
	if err != nil {
		return err
	}
	defer m.Close()
	sys, srv, bg := m.sys, m.srv, m.bg
	if c.public && sys.policy.UsesClientRoots() {
		log.Info("policy: the roots MCP clients declare are not accepted as workspace roots under --public (they name directories of the clients' machines)")
	}
	// Background runs of the state root that no live server drives are
	// taken over from now on, as by stratum mcp.
	bg.Supervise()
	mcpHandler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv },
		&sdk.StreamableHTTPOptions{Logger: log, SessionTimeout: 30 * time.Minute})
	site, err := web.New(web.Options{Engine: sys.engine, Chain: sys.store, Token: token, Hosts: []string(c.hosts), MCP: mcpHandler,
		AllowDecision: sys.decisionAllowed, Version: Version, Logger: log})
	if err != nil {
		return usagef("%v", err)
	}
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", c.addr, err)
	}
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(env.Stdout, "stratum serve: %s (state %s)\n", base, sys.root)
	if c.tokenFile == "" {
		fmt.Fprintf(env.Stdout, "  open: %s/?token=%s\n", base, token)
		fmt.Fprintf(env.Stdout, "  mcp:  %s/mcp with the header \"Authorization: Bearer %s\"\n", base, token)
	} else {
		fmt.Fprintf(env.Stdout, "  open: %s/?token=TOKEN (the token in %s)\n", base, c.tokenFile)
		fmt.Fprintf(env.Stdout, "  mcp:  %s/mcp with the header \"Authorization: Bearer TOKEN\"\n", base)
	}
	if f, ok := env.Stdout.(interface{ Sync() error }); ok {
		_ = f.Sync()
	}
	serveCtx, stop := context.WithCancel(ctx)
	defer stop()
	hs := &http.Server{Handler: site, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return serveCtx }, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	// Live streams and MCP streams end with serveCtx; give requests in
	// progress a moment to finish.
	stop()
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdown); err != nil {
		_ = hs.Close()
	}
	log.Info("stratum serve stopped")
	return nil
}

// checkServeAddr refuses an address that is not HOST:PORT, and one that
// is not on a loopback interface unless public.
func checkServeAddr(addr string, public bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("--addr %q: %v (want HOST:PORT, for example %s)", addr, err, defaultServeAddr)
	}
	if public {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	where := host
	if host == "" {
		where = "every interface"
	}
	return usagef("--addr %q listens on %s, not on a loopback address: add --public to serve other machines (they still need the token)", addr, where)
}

// readTokenFile reads a token from the first line of a file.
func readTokenFile(env *Env, name string) (string, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return "", usagef("--token-file: %v", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	t := strings.TrimSpace(line)
	if len(t) < web.MinTokenLen {
		return "", usagef("--token-file %s: the token must be at least %d characters on the file's first line", name, web.MinTokenLen)
	}
	if fi, err := os.Stat(name); err == nil && fi.Mode().Perm()&0o077 != 0 {
		fmt.Fprintf(env.Stderr, "stratum serve: warning: %s can be read by other users (chmod 600 it)\n", name)
	}
	return t, nil
}
