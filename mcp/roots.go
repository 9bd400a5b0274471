package mcp

import (
	"context"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP client's roots (roots/list): the directories the host says the
// session works in. They are one source of the workspace roots a run may
// use (docs/policy.md, "The workspace jail"); the engine's policy decides.
// They come from the host, never from a tool's arguments.

// rootsTimeout bounds the wait for a client's roots/list answer: a client
// that declares the capability and never answers costs one plan this
// long, then is taken to have no roots for the rest of its session.
const rootsTimeout = 2 * time.Second

// rootsCache holds each session's roots, asked once per session and again
// after the client says its roots changed.
type rootsCache struct {
	mu sync.Mutex
	m  map[*sdk.ServerSession][]string
}

// get returns the session's roots as absolute paths, asking the client
// when they are not known yet. A client that did not declare the roots
// capability, speaks a protocol in which the server may not ask (from
// 2026-07-28 on, roots are deprecated), fails or does not answer in time
// has none.
func (c *rootsCache) get(ctx context.Context, ss *sdk.ServerSession) []string {
	if ss == nil {
		return nil
	}
	c.mu.Lock()
	roots, known := c.m[ss]
	c.mu.Unlock()
	if known {
		return roots
	}
	roots = askRoots(ctx, ss)
	if ctx.Err() != nil {
		return roots // the call is going away: ask again next time
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[*sdk.ServerSession][]string{}
	}
	if _, seen := c.m[ss]; !seen {
		go func() {
			_ = ss.Wait() // forget the session when it ends
			c.forget(ss)
		}()
	}
	c.m[ss] = roots
	return roots
}

// forget drops a session's roots (they changed, or the session ended).
func (c *rootsCache) forget(ss *sdk.ServerSession) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, ss)
}

// askRoots asks the client for its roots.
func askRoots(ctx context.Context, ss *sdk.ServerSession) []string {
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.RootsV2 == nil || ip.ProtocolVersion >= "2026-07-28" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, rootsTimeout)
	defer cancel()
	//lint:ignore SA1019 roots are deprecated from 2026-07-28 on, and the only source of a session's directories before it
	res, err := ss.ListRoots(ctx, &sdk.ListRootsParams{})
	if err != nil || res == nil {
		return nil
	}
	var out []string
	for _, r := range res.Roots {
		if r == nil {
			continue
		}
		if p, ok := fileURIPath(r.URI); ok {
			out = append(out, p)
		}
	}
	return out
}

// fileURIPath converts a file:// URI of this machine to an absolute path.
func fileURIPath(uri string) (string, bool) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || u.Host != "" && u.Host != "localhost" || u.Path == "" {
		return "", false
	}
	p := filepath.FromSlash(u.Path)
	if !filepath.IsAbs(p) {
		return "", false
	}
	return filepath.Clean(p), true
}
