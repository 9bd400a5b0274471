package web

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/store"
)

// Chain verifies a run's hash chain (the store's Verify; the run page
// passes no anchor).
type Chain interface {
	Verify(ctx context.Context, runID string, opts store.VerifyOptions) (*store.VerifyReport, error)
}

// Options configure a Server.
type Options struct {
	// Engine is the engine every page reads and every decision goes
	// through. Required.
	Engine *engine.Engine
	// Chain verifies a run's log for the run page's chain badge. Required.
	Chain Chain
	// Token is the credential every request must present (at least
	// MinTokenLen characters). Required.
	Token string
	// Hosts are the host names requests may be addressed to besides
	// localhost and IP addresses (the DNS rebinding check).
	Hosts []string
	// MCP, when set, is served at /mcp to requests with the bearer token.
	MCP http.Handler
	// AllowDecision, when set, is asked before every gate decision; an
	// error refuses the decision with its message before anything is
	// recorded (the effects policy: docs/policy.md).
	AllowDecision func(ctx context.Context, runID string) error
	// PollInterval is how often an open page's live stream asks the
	// engine for news; zero means DefaultPollInterval.
	PollInterval time.Duration
	// Version is shown in the pages' footer.
	Version string
	// Logger receives request failures; nil discards them.
	Logger *slog.Logger
}

// DefaultPollInterval is how often a live stream polls the engine: a new
// event reaches an open page within about this much plus one render.
const DefaultPollInterval = 50 * time.Millisecond

// Server is the web view: an http.Handler.
type Server struct {
	opts   Options
	eng    *engine.Engine
	auth   *auth
	pages  *pages
	log    *slog.Logger
	mux    *http.ServeMux
	csrf   *http.CrossOriginProtection
	chains chainCache
}

// New returns a Server.
func New(opts Options) (*Server, error) {
	if opts.Engine == nil || opts.Chain == nil {
		return nil, errors.New("web: Options.Engine and Options.Chain are required")
	}
	a, err := newAuth(opts.Token, opts.Hosts)
	if err != nil {
		return nil, err
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p, err := loadPages()
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, eng: opts.Engine, auth: a, pages: p, log: log, mux: http.NewServeMux(), csrf: http.NewCrossOriginProtection()}
	static, _ := fs.Sub(assets, "static") // the embedded directory exists
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /{$}", s.runsPage)
	s.mux.HandleFunc("GET /runs/{run}", s.runPage)
	s.mux.HandleFunc("GET /runs/{run}/patch", s.patch)
	s.mux.HandleFunc("GET /runs/{run}/events", s.eventsPage)
	s.mux.HandleFunc("GET /runs/{run}/steps/{step...}", s.stepPage)
	s.mux.HandleFunc("GET /gates", s.gatesPage)
	s.mux.HandleFunc("POST /decide", s.decide)
	s.mux.HandleFunc("GET /live", s.live)
	return s, nil
}

// ServeHTTP checks every request (docs/serve.md, "Security") and serves
// it: the Host first (DNS rebinding), then the credential, then for a
// mutation its origin.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header())
	if !s.auth.hostOK(r.Host) {
		refuse(w, http.StatusMisdirectedRequest, "This server does not answer to that host name. Use the address stratum serve printed (or start it with --allow-host NAME).")
		return
	}
	if r.URL.Path == "/mcp" || strings.HasPrefix(r.URL.Path, "/mcp/") {
		s.serveMCP(w, r)
		return
	}
	if s.auth.login(w, r) {
		return
	}
	if err := s.auth.check(r, true); err != nil {
		msg := "This server needs its token. Open the address stratum serve printed when it started (it ends in ?token=...), or send Authorization: Bearer TOKEN."
		if errors.Is(err, errBadCredential) {
			msg = "The credential is not this server's. Open the address stratum serve printed when it started."
		}
		refuse(w, http.StatusUnauthorized, msg)
		return
	}
	if err := s.csrf.Check(r); err != nil {
		refuse(w, http.StatusForbidden, "Refused: this request comes from another site.")
		return
	}
	s.mux.ServeHTTP(w, r)
}

// serveMCP serves the MCP endpoint to bearer tokens only: an MCP client
// is not a browser, and a browser's cookie must not reach the tools.
func (s *Server) serveMCP(w http.ResponseWriter, r *http.Request) {
	if s.opts.MCP == nil {
		http.NotFound(w, r)
		return
	}
	if err := s.auth.check(r, false); err != nil {
		refuse(w, http.StatusUnauthorized, "The MCP endpoint needs the server's token as Authorization: Bearer TOKEN.")
		return
	}
	if err := s.csrf.Check(r); err != nil {
		refuse(w, http.StatusForbidden, "Refused: this request comes from another site.")
		return
	}
	s.opts.MCP.ServeHTTP(w, r)
}
