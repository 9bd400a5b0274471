package mcp

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync/atomic"
)

// warmStacks runs tool calls on goroutines kept from one call to the
// next. The SDK starts a goroutine for every request, whose stack starts
// small and is copied each time it doubles on the way down through
// argument decoding, the engine and the store: about 50 µs a step_done,
// a twentieth of the server's CPU per call. A kept goroutine's stack
// stays grown between calls; a collection halves it while it waits
// (using less than a quarter of it), and collections are rare (floorGC
// in package cli), so a call grows it again about once in a hundred.
type warmStacks struct {
	idle    chan chan func()
	workers atomic.Int32 // goroutines alive, waiting or running a call
}

// warmIdle is how many goroutines wait for a call at most; more calls at
// once start more, which end when they find no room to wait.
const warmIdle = 8

var warm = warmStacks{idle: make(chan chan func(), warmIdle)}

// run calls fn on a kept goroutine and waits for it. A panic in fn is
// raised again here, in the caller, as a [*warmPanic] that carries the
// value and the stack where it happened (the SDK does not recover, so
// that stack is what a crash shows); a runtime.Goexit in fn (a test's
// FailNow) ends the caller's goroutine too. Nothing else of a goroutine
// passes between calls: tool handlers neither lock their OS thread nor
// set pprof labels.
func (w *warmStacks) run(fn func()) {
	var job chan func()
	select {
	case job = <-w.idle:
	default:
		job = make(chan func())
		go w.work(job)
	}
	done := make(chan callEnd, 1)
	job <- func() {
		returned := false
		defer func() {
			end := callEnd{returned: returned}
			if !returned {
				if end.panic = recover(); end.panic != nil {
					end.stack = debug.Stack()
				}
			}
			done <- end
		}()
		fn()
		returned = true
	}
	end := <-done
	switch {
	case end.panic != nil:
		panic(&warmPanic{value: end.panic, stack: end.stack})
	case !end.returned:
		runtime.Goexit()
	}
}

// callEnd is how a call on a kept goroutine ended: it returned, it
// panicked (with the stack), or neither (runtime.Goexit).
type callEnd struct {
	returned bool
	panic    any
	stack    []byte
}

// warmPanic is a panic of a call on a kept goroutine, raised again in
// its caller.
type warmPanic struct {
	value any
	stack []byte
}

func (p *warmPanic) Error() string {
	return fmt.Sprintf("%v\n\ngoroutine of the call:\n%s", p.value, p.stack)
}

func (p *warmPanic) Unwrap() error {
	err, _ := p.value.(error)
	return err
}

func (w *warmStacks) work(job chan func()) {
	w.workers.Add(1)
	defer w.workers.Add(-1)
	for fn := range job {
		fn() // a Goexit in it ends this goroutine: run's caller starts another
		select {
		case w.idle <- job:
		default:
			return
		}
	}
}
