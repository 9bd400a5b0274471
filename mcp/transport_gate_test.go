package mcp

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// ready reports whether next would return at once (test-only peek).
func (g *gate) ready() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed || len(g.urgent) > 0 || (len(g.held) > 0 && g.admits(g.held[0])) || (g.eof && len(g.held) == 0)
}

// frameMsg is a frame decoded as the filter hands it to the gate.
func frameMsg(t testing.TB, frame string) jsonrpc.Message {
	t.Helper()
	msg, err := jsonrpc.DecodeMessage([]byte(frame))
	if err != nil {
		t.Fatalf("%s: %v", frame, err)
	}
	return msg
}

// pushFrame pushes a frame as the filter does: decoded, with its size on
// the wire; it reports what push does.
func pushFrame(t testing.TB, g *gate, frame string, id any) bool {
	t.Helper()
	return g.push(frameMsg(t, strings.TrimSuffix(frame, "\n")), len(frame), id)
}

func reqFrame(id int, size int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"x","params":{"p":"%s"}}`+"\n", id, strings.Repeat("p", size))
}

func mustNext(t *testing.T, g *gate, want string) {
	t.Helper()
	if !g.ready() {
		t.Fatalf("next would block, want %s", want)
	}
	msg, ok := g.next(context.Background())
	if !ok || !strings.Contains(wire(t, msg), want) {
		t.Fatalf("next = %v, %v; want one with %s", msg, ok, want)
	}
}

func TestGateLimitsRequestsInFlight(t *testing.T) {
	g := newGate(gateLimits{requests: 2, requestBytes: 1 << 20, heldBytes: 1 << 20, heldFrames: 100})
	for i := 1; i <= 4; i++ {
		pushFrame(t, g, reqFrame(i, 0), int64(i))
	}
	pushFrame(t, g, `{"jsonrpc":"2.0","method":"notifications/n"}`+"\n", nil)
	mustNext(t, g, `"id":1`)
	mustNext(t, g, `"id":2`)
	if g.ready() {
		t.Fatal("a third request passed with two in flight")
	}
	// A response of the client's and a cancellation pass ahead.
	g.pushUrgent(frameMsg(t, `{"jsonrpc":"2.0","id":"s1","result":{}}`))
	mustNext(t, g, `"s1"`)
	if g.ready() {
		t.Fatal("still two in flight")
	}
	g.answered(int64(1))
	mustNext(t, g, `"id":3`)
	if !g.cancelHeld(int64(4)) || g.cancelHeld(int64(4)) || g.inUse(int64(4)) {
		t.Fatal("cancelling held request 4")
	}
	if g.cancelHeld(int64(2)) {
		t.Fatal("cancelHeld dropped request 2, which is in flight")
	}
	// The notification behind request 4 comes next, without waiting.
	mustNext(t, g, "notifications/n")
	g.end(nil)
	if _, ok := g.next(context.Background()); ok {
		t.Fatal("next after the end of the input with nothing held")
	}
}

func TestGateLimitsBytesInFlight(t *testing.T) {
	g := newGate(gateLimits{requests: 10, requestBytes: 1000, heldBytes: 1 << 20, heldFrames: 100})
	pushFrame(t, g, reqFrame(1, 2000), int64(1)) // over the budget alone: admitted, nothing in flight
	pushFrame(t, g, reqFrame(2, 10), int64(2))
	mustNext(t, g, `"id":1`)
	if g.ready() {
		t.Fatal("request 2 passed while 2 KB were in flight on a 1 KB budget")
	}
	g.answered(int64(1))
	mustNext(t, g, `"id":2`)
	pushFrame(t, g, reqFrame(3, 10), int64(3))
	mustNext(t, g, `"id":3`) // small requests share the budget
}

func TestGateHoldsInOrder(t *testing.T) {
	g := newGate(gateLimits{requests: 1, requestBytes: 1 << 20, heldBytes: 1 << 20, heldFrames: 100})
	pushFrame(t, g, reqFrame(1, 0), int64(1))
	mustNext(t, g, `"id":1`)
	pushFrame(t, g, reqFrame(2, 0), int64(2))
	pushFrame(t, g, `{"jsonrpc":"2.0","method":"after-2"}`+"\n", nil)
	if g.ready() {
		t.Fatal("a notification overtook the request held before it")
	}
	g.answered(int64(1))
	mustNext(t, g, `"id":2`)
	mustNext(t, g, "after-2")
}

// TestGateStopsTheReader: push blocks while more than the held bounds
// wait, and returns once next makes room (or the SDK side goes away).
func TestGateStopsTheReader(t *testing.T) {
	for _, bound := range []string{"frames", "bytes"} {
		t.Run(bound, func(t *testing.T) {
			l := gateLimits{requests: 1, requestBytes: 1 << 20, heldBytes: 1 << 20, heldFrames: 3}
			if bound == "bytes" {
				l.heldBytes, l.heldFrames = 300, 100
			}
			g := newGate(l)
			pushFrame(t, g, reqFrame(1, 0), int64(1))
			mustNext(t, g, `"id":1`) // in flight: nothing more passes
			for i := 2; i <= 4; i++ {
				pushFrame(t, g, reqFrame(i, 40), int64(i))
			}
			returned := make(chan bool)
			go func() { returned <- pushFrame(t, g, reqFrame(5, 40), int64(5)) }()
			waitFor(t, func() bool { return g.inUse(int64(5)) })
			select {
			case <-returned:
				t.Fatal("push returned with the held frames over their bound")
			default:
			}
			g.answered(int64(1))
			mustNext(t, g, `"id":2`)
			if !<-returned {
				t.Fatal("push reported the SDK side gone")
			}
			go func() { returned <- pushFrame(t, g, reqFrame(6, 400), int64(6)) }()
			waitFor(t, func() bool { return g.inUse(int64(6)) })
			g.close()
			if <-returned {
				t.Fatal("push after close reported the SDK side alive")
			}
		})
	}
}

// waitFor polls until cond holds (a state to reach, not a deadline: the
// test's own timeout bounds it).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for !cond() {
		time.Sleep(time.Millisecond)
	}
}

func TestGateDrain(t *testing.T) {
	g := newGate(bigGate)
	pushFrame(t, g, reqFrame(1, 0), int64(1))
	pushFrame(t, g, reqFrame(2, 0), "two")
	mustNext(t, g, `"id":1`)
	mustNext(t, g, `"id":2`)
	if g.drain(10 * time.Millisecond) {
		t.Fatal("drained with two requests in flight")
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		g.answered(int64(1))
		g.answered("two")
	}()
	if !g.drain(time.Minute) {
		t.Fatal("still in flight after both answers")
	}
	wg.Wait()
}

// TestGateHandedOff: the filter yields (handedOff) only after a push
// that woke a parked reader to a frame it may take: not when no reader
// waits, nor when the in-flight limit keeps the frame held.
func TestGateHandedOff(t *testing.T) {
	g := newGate(gateLimits{requests: 1, requestBytes: 1 << 20, heldBytes: 1 << 20, heldFrames: 8})
	parked := func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.waiting > 0
	}
	got := make(chan jsonrpc.Message, 4)
	read := func() { m, _ := g.next(context.Background()); got <- m }

	pushFrame(t, g, reqFrame(1, 1), 1) // no reader waits
	if g.handedOff() {
		t.Fatal("handed off with no reader waiting")
	}
	go read()
	<-got // request 1 is now in flight

	go read()
	waitFor(t, parked)
	pushFrame(t, g, reqFrame(2, 1), 2) // the limit keeps it held
	if g.handedOff() {
		t.Fatal("handed off a frame the in-flight limit holds")
	}
	g.answered(1) // the parked reader takes request 2
	<-got
	g.answered(2)

	go read()
	waitFor(t, parked)
	pushFrame(t, g, reqFrame(3, 1), 3)
	if !g.handedOff() {
		t.Fatal("a parked reader woken to a frame it may take: not handed off")
	}
	if g.handedOff() {
		t.Fatal("handedOff did not reset")
	}
	<-got
}
