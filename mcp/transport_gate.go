package mcp

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Limits of the stream transport's backpressure (docs/mcp.md, "Limits and
// backpressure").
const (
	// MaxInFlight bounds the requests passed to the SDK and not yet
	// answered. An answer counts once it is written to the output, so a
	// client that does not read its answers stops the server from taking
	// more work from it.
	MaxInFlight = 32
	// MaxInFlightBytes bounds the summed frame sizes of those requests; a
	// request is always admitted when nothing else is in flight, so one
	// frame of MaxFrameBytes can run.
	MaxInFlightBytes = 16 << 20
	// maxHeldBytes and maxHeldFrames bound what is read ahead while the
	// in-flight limits are reached (requests waiting their turn, and the
	// notifications behind them, kept in order). Past them the transport
	// stops reading its input, so the client's writes block.
	maxHeldBytes  = 8 << 20
	maxHeldFrames = 1024
)

// gateLimits are the bounds a gate enforces (constants above, smaller in
// tests).
type gateLimits struct {
	requests, requestBytes int
	heldBytes, heldFrames  int
}

var defaultGateLimits = gateLimits{MaxInFlight, MaxInFlightBytes, maxHeldBytes, maxHeldFrames}

// A gate sits between the frame filter (which reads the client) and the
// SDK: it passes requests on only while fewer than the limits are in
// flight, holds the rest in order, and makes the filter stop reading when
// too much is held. Responses from the client (to calls the server made)
// and cancellations pass at once, ahead of anything held: a handler
// waiting for one must never wait behind the requests it holds up, and a
// cancellation of a held request simply drops it.
type gate struct {
	mu     sync.Mutex
	cond   sync.Cond
	limits gateLimits

	inflight map[any]int // requests passed on and not answered: id → frame bytes
	bytes    int         // their sum

	held      []heldFrame // read, not yet passed on, in input order
	heldBytes int
	heldIDs   map[any]int // how many held requests have each id

	urgent []jsonrpc.Message // to pass on before anything held

	eof     bool  // the input ended (readErr says how)
	readErr error // nil at a clean end of the input
	closed  bool  // the SDK side is gone: nothing more is passed on

	waiting int  // readers parked in next
	woke    bool // a push since the last handedOff woke a parked reader to a frame it may take
}

// heldFrame is a frame waiting its turn, decoded (msg) and its size on
// the wire (what the byte limits count); id is nil for a notification.
type heldFrame struct {
	msg  jsonrpc.Message
	size int
	id   any
}

func newGate(l gateLimits) *gate {
	g := &gate{limits: l, inflight: map[any]int{}, heldIDs: map[any]int{}}
	g.cond.L = &g.mu
	return g
}

// inUse reports whether a request with this id is held or in flight.
func (g *gate) inUse(id any) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.inflight[id]
	return ok || g.heldIDs[id] > 0
}

// push queues a request (id non-nil) or notification of size bytes
// behind those held, then waits while the held frames are over their
// bounds. It returns false when the SDK side is gone.
func (g *gate) push(msg jsonrpc.Message, size int, id any) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = append(g.held, heldFrame{msg: msg, size: size, id: id})
	g.heldBytes += size
	if id != nil {
		g.heldIDs[id]++
	}
	g.woke = g.woke || g.waiting > 0 && g.admits(g.held[0])
	g.cond.Broadcast()
	for !g.closed && (g.heldBytes > g.limits.heldBytes || len(g.held) > g.limits.heldFrames) {
		g.cond.Wait()
	}
	return !g.closed
}

// pushUrgent queues a frame to pass on before anything held.
func (g *gate) pushUrgent(msg jsonrpc.Message) {
	g.mu.Lock()
	g.urgent = append(g.urgent, msg)
	g.cond.Broadcast()
	g.mu.Unlock()
}

// cancelHeld drops the held request with this id, if there is one, and
// reports whether it did (the request was never passed on, so it gets no
// answer, as a cancelled request should not).
func (g *gate) cancelHeld(id any) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.heldIDs[id] == 0 {
		return false
	}
	for i, h := range g.held {
		if h.id == id {
			g.held = append(g.held[:i], g.held[i+1:]...)
			g.heldBytes -= h.size
			if g.heldIDs[id]--; g.heldIDs[id] == 0 {
				delete(g.heldIDs, id)
			}
			g.cond.Broadcast()
			return true
		}
	}
	return false
}

// end notes the end of the input (err nil: a clean end).
func (g *gate) end(err error) {
	g.mu.Lock()
	g.eof, g.readErr = true, err
	g.cond.Broadcast()
	g.mu.Unlock()
}

// inputEnded reports whether the input ended while the SDK side is still
// there, and how it ended (nil: cleanly).
func (g *gate) inputEnded() (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.eof && !g.closed, g.readErr
}

// close notes that the SDK side is gone; everything waiting returns.
func (g *gate) close() {
	g.mu.Lock()
	g.closed = true
	g.cond.Broadcast()
	g.mu.Unlock()
}

// next waits for the next message to pass on: an urgent one, else the
// first held one once the in-flight limits admit it (a request then counts
// as in flight). It returns false when nothing more will come (the SDK
// side is gone, or the input ended and nothing is held) or ctx is done.
func (g *gate) next(ctx context.Context) (jsonrpc.Message, bool) {
	if ctx.Done() != nil { // the SDK's reading context is never done
		stop := context.AfterFunc(ctx, func() {
			g.mu.Lock()
			g.cond.Broadcast()
			g.mu.Unlock()
		})
		defer stop()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for {
		switch {
		case g.closed || ctx.Err() != nil:
			return nil, false
		case len(g.urgent) > 0:
			msg := g.urgent[0]
			g.urgent[0] = nil
			g.urgent = g.urgent[1:]
			return msg, true
		case len(g.held) > 0 && g.admits(g.held[0]):
			h := g.held[0]
			g.held[0] = heldFrame{}
			g.held = g.held[1:]
			g.heldBytes -= h.size
			if h.id != nil {
				if g.heldIDs[h.id]--; g.heldIDs[h.id] == 0 {
					delete(g.heldIDs, h.id)
				}
				g.inflight[h.id] = h.size
				g.bytes += h.size
			}
			g.cond.Broadcast() // room for the filter
			return h.msg, true
		case g.eof && len(g.held) == 0:
			return nil, false
		}
		g.waiting++
		g.cond.Wait()
		g.waiting--
	}
}

// handedOff reports whether a frame pushed since it was last asked went
// to a reader that was parked waiting for it. The filter then yields its
// processor before it reads on (handOff).
func (g *gate) handedOff() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	woke := g.woke
	g.woke = false
	return woke
}

// admits reports whether h may be passed on now.
func (g *gate) admits(h heldFrame) bool {
	if h.id == nil {
		return true
	}
	n := len(g.inflight)
	return n == 0 || (n < g.limits.requests && g.bytes+h.size <= g.limits.requestBytes)
}

// answered notes that the answer to the request with this id has been
// written (or its writing failed: either way it no longer holds memory).
func (g *gate) answered(id any) {
	g.mu.Lock()
	if size, ok := g.inflight[id]; ok {
		delete(g.inflight, id)
		g.bytes -= size
		g.cond.Broadcast()
	}
	g.mu.Unlock()
}

// drain waits until every request passed on is answered, the SDK side is
// gone, or timeout passes; it reports whether nothing is left unanswered.
func (g *gate) drain(timeout time.Duration) bool {
	expired := false
	t := time.AfterFunc(timeout, func() {
		g.mu.Lock()
		expired = true
		g.cond.Broadcast()
		g.mu.Unlock()
	})
	defer t.Stop()
	g.mu.Lock()
	defer g.mu.Unlock()
	for len(g.inflight) > 0 && !g.closed && !expired {
		g.cond.Wait()
	}
	return len(g.inflight) == 0
}
