package mcp

import (
	"context"
	"fmt"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultProgressInterval is how often a long call tells a client that
// asked for progress that it is still running (as the reference does).
const DefaultProgressInterval = 15 * time.Second

// startProgress, when the client sent a progress token with the call,
// sends a progress notification every s.progressEvery until stop is
// called, and lets the handler send its own (c.progress: an agent's
// progress lines). Progress counts 1, 2, 3, ...; notifications are sent
// one at a time. Without a token it does nothing.
func (s *server) startProgress(ctx context.Context, req *sdk.CallToolRequest, c *call, tool string) (stop func()) {
	if req == nil || req.Params == nil || req.Session == nil {
		return func() {}
	}
	tok := req.Params.GetProgressToken()
	if tok == nil {
		return func() {}
	}
	var mu sync.Mutex
	n, ended := 0, false
	send := func(msg string) {
		mu.Lock()
		defer mu.Unlock()
		if ended {
			return
		}
		n++
		// A client that went away just misses the notification.
		_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: float64(n), Message: msg})
	}
	c.progress = send
	start := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(s.progressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				send(fmt.Sprintf("%s is still working (%s)", tool, time.Since(start).Round(time.Second)))
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		mu.Lock()
		ended = true
		mu.Unlock()
	}
}
