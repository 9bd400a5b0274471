package mcp

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestWarmStacksRaisePanicsInTheCaller: a panic in the call is the
// caller's, with its value, and the kept goroutine goes on serving.
func TestWarmStacksRaisePanicsInTheCaller(t *testing.T) {
	w := &warmStacks{idle: make(chan chan func(), 2)}
	func() {
		defer func() {
			p, _ := recover().(*warmPanic)
			if p == nil || p.value != "boom" {
				t.Fatalf("recovered %v, want the call's panic boom", p)
			}
			// The stack is the call's, where it panicked.
			if msg := p.Error(); !strings.Contains(msg, "boom") || !strings.Contains(msg, "panicsInTheCall") {
				t.Errorf("the panic says %q, want the value and the call's stack", msg)
			}
		}()
		w.run(panicsInTheCall)
		t.Error("run returned after its call panicked")
	}()
	ran := false
	w.run(func() { ran = true })
	if !ran {
		t.Error("after a panic the next call did not run")
	}
}

//go:noinline
func panicsInTheCall() { panic("boom") }

// TestWarmStacksGoexit: a call that ends its goroutine (t.FailNow in a
// handler under test) ends the caller's too, never returning as if the
// call had finished.
func TestWarmStacksGoexit(t *testing.T) {
	w := &warmStacks{idle: make(chan chan func(), 2)}
	returned, ended := false, make(chan struct{})
	go func() {
		defer close(ended)
		w.run(runtime.Goexit)
		returned = true
	}()
	<-ended
	if returned {
		t.Error("run returned after its call's runtime.Goexit")
	}
	ran := false
	w.run(func() { ran = true })
	if !ran {
		t.Error("after a Goexit the next call did not run")
	}
}

// TestWarmStacksKeepAtMostTheirRoom: calls at once each get a goroutine;
// afterwards at most the room's worth wait for the next call, the others
// end, and a later call runs on a kept one.
func TestWarmStacksKeepAtMostTheirRoom(t *testing.T) {
	const room, calls = 3, 20
	w := &warmStacks{idle: make(chan chan func(), room)}
	release := make(chan struct{})
	var started, done sync.WaitGroup
	started.Add(calls)
	for range calls {
		done.Go(func() {
			w.run(func() {
				started.Done()
				<-release
			})
		})
	}
	started.Wait() // all at once: no call waited for another's goroutine
	if n := w.workers.Load(); n != calls {
		t.Errorf("%d goroutines ran %d calls at once, want one each", n, calls)
	}
	close(release)
	done.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for w.workers.Load() > room && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := w.workers.Load(); n != room {
		t.Errorf("%d goroutines left after the calls, want %d", n, room)
	}
	if len(w.idle) != room {
		t.Errorf("%d goroutines wait for a call, want %d", len(w.idle), room)
	}
	w.run(func() {})
	if len(w.idle) != room {
		t.Errorf("a call on a kept goroutine left %d waiting, want %d", len(w.idle), room)
	}
}

// deep uses about n KiB of stack.
//
//go:noinline
func deep(n int) byte {
	var pad [1000]byte
	if n == 0 {
		return pad[0]
	}
	pad[n%1000] = byte(n)
	return deep(n-1) + pad[(n+1)%1000]
}

// BenchmarkWarmStacks: a call using 64 KiB of stack on a new goroutine
// (as the SDK runs each request) and on a kept one.
func BenchmarkWarmStacks(b *testing.B) {
	b.Run("new", func(b *testing.B) {
		for b.Loop() {
			done := make(chan struct{})
			go func() { deep(64); close(done) }()
			<-done
		}
	})
	b.Run("kept", func(b *testing.B) {
		w := &warmStacks{idle: make(chan chan func(), 1)}
		for b.Loop() {
			w.run(func() { deep(64) })
		}
	})
}
