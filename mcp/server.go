package mcp

import (
	"context"
	_ "embed"
	"errors"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratum-go/stratum/driver"
	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/guard"
)

// ServerName is the name the server gives in its initialize answer.
const ServerName = "stratum"

//go:embed instructions.md
var instructions string

// Instructions returns the guidance sent to clients as the server's
// instructions: how an agent should use Stratum's tools.
func Instructions() string { return instructions }

// Deps is what the server needs from its host.
type Deps struct {
	// Engine runs the flows. Required.
	Engine *engine.Engine
	// Version is the Stratum version reported to clients.
	Version string
	// Guard serves the guard tools; nil leaves them out.
	Guard *guard.Guard
	// Logger receives the server's logs (never stdout, which carries the
	// protocol). Nil discards them.
	Logger *slog.Logger
	// Effects are what the engine's policy lets runs do on this machine;
	// the tool annotations tell clients so (docs/policy.md, "What the
	// annotations say"). The zero value is a server that runs no command
	// and starts no agent.
	Effects Effects
	// ClientRoots makes stratum_plan ask each client for its roots
	// (roots/list, once per session) and pass them to the engine as
	// PlanRequest.ClientRoots, for the policy to accept workspace roots
	// inside them.
	ClientRoots bool
	// Background drives background runs (stratum_flow_run_bg); nil makes
	// the server refuse to start one (the other background tools still
	// read and cancel any background run of the store).
	Background *driver.Background
	// Agents runs agents for clients (stratum_agent_run); nil makes the
	// server refuse to start one.
	Agents *driver.AgentRuns
	// ProgressInterval is how often a call whose client asked for
	// progress (a progress token) is told that it is still running;
	// zero means 15 seconds.
	ProgressInterval time.Duration
}

// Effects are the effects the server's policy allows, as far as the tool
// annotations are concerned.
type Effects struct {
	// Commands: evaluate steps and pre_merge commands may run.
	Commands bool
	// Agents: engine-dispatched fanouts may start agents.
	Agents bool
	// Judge: a judge is configured (it may reach outside the machine).
	Judge bool
	// GuardCommands: guard predicates may run commands
	// (STRATUM_GUARD_ALLOW_COMMANDS=1).
	GuardCommands bool
}

// server holds the dependencies the tool handlers close over.
type server struct {
	eng   *engine.Engine
	guard *guard.Guard
	log   *slog.Logger
	// schemas returns the schema overrides of typeSchemas, computed once
	// when first needed.
	schemas func() map[reflect.Type]*jsonschema.Schema
	// cache is the generated schema cache (schemas.go).
	cache map[string]cachedTool
	// effects decide the annotations of the tools that can cause them.
	effects Effects
	// clientRoots: ask clients for their roots (Deps.ClientRoots).
	clientRoots bool
	roots       rootsCache
	bg          *driver.Background
	agents      *driver.AgentRuns
	// progressEvery is Deps.ProgressInterval.
	progressEvery time.Duration
}

func newServer(eng *engine.Engine, log *slog.Logger) *server {
	return &server{eng: eng, log: log, schemas: sync.OnceValue(typeSchemas), cache: loadSchemaCache(log)}
}

// NewServer returns an MCP server with every Stratum tool registered.
// Run it with (*sdk.Server).Run on a transport.
func NewServer(d Deps) (*sdk.Server, error) {
	return buildServer(d, true)
}

// buildServer is NewServer; without the schema cache every schema is
// inferred (the tests compare the two).
func buildServer(d Deps, useCache bool) (*sdk.Server, error) {
	if d.Engine == nil {
		return nil, errors.New("mcp: Deps.Engine is required")
	}
	log := d.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	version := d.Version
	if version == "" {
		version = "dev"
	}
	s := newServer(d.Engine, log)
	s.guard = d.Guard
	s.effects, s.clientRoots = d.Effects, d.ClientRoots
	s.bg, s.agents, s.progressEvery = d.Background, d.Agents, d.ProgressInterval
	if s.progressEvery <= 0 {
		s.progressEvery = DefaultProgressInterval
	}
	if !useCache {
		s.cache = nil
	}
	impl := &sdk.Implementation{Name: ServerName, Title: "Stratum", Version: version}
	srv := sdk.NewServer(impl,
		&sdk.ServerOptions{
			Instructions: instructions,
			Logger:       sdkLogger(log),
			// Tools, and the language reference as a resource and a
			// prompt (docs.go); no list ever changes while serving.
			Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{},
				Resources: &sdk.ResourceCapabilities{}, Prompts: &sdk.PromptCapabilities{}},
			// A client whose roots changed is asked again at its next plan.
			RootsListChangedHandler: func(_ context.Context, req *sdk.RootsListChangedRequest) { s.roots.forget(req.Session) },
		})
	tools := s.tools()
	direct := &directTools{serve: make(map[string]sdk.ToolHandler, len(tools)), rootsChanged: s.roots.forget,
		// NewServer is given no versions of its own: it supports the SDK's.
		server: impl, protocols: sdk.SupportedProtocolVersions()}
	for _, t := range tools {
		t.add(srv)
		direct.serve[t.def.Name] = t.serve
	}
	registerDirect(srv, direct)
	addDocs(srv)
	return srv, nil
}

// sdkLogger is the logger given to the SDK: its session life-cycle
// messages are at info level, which would drown the server's own info
// logs, so below debug it only passes warnings and errors.
func sdkLogger(log *slog.Logger) *slog.Logger {
	if log.Enabled(context.Background(), slog.LevelDebug) {
		return log
	}
	return slog.New(minLevel{Handler: log.Handler(), min: slog.LevelWarn})
}

type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{Handler: h.Handler.WithAttrs(as), min: h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{Handler: h.Handler.WithGroup(name), min: h.min}
}

// tools lists every tool, in the order they are advertised.
func (s *server) tools() []tool {
	return append([]tool{
		s.validateTool(),
		s.planTool(),
		s.stepDoneTool(),
		s.gateResolveTool(),
		s.auditTool(),
		s.gatesTool(),
		s.flowPollTool(),
		s.resumeTool(),
		s.commitTool(),
		s.revertTool(),
		s.flowCancelTool(),
		s.flowRunBgTool(),
		s.flowBgPollTool(),
		s.flowCancelBgTool(),
		s.agentRunTool(),
		s.agentPollTool(),
		s.cancelAgentRunTool(),
		s.usageReportTool(),
		s.compileSpeckitTool(),
	}, s.guardTools()...)
}
