package mcp

// warmStacks runs tool calls on goroutines kept from one call to the
// next. The SDK starts a goroutine for every request, whose stack starts
// small and is copied each time it doubles on the way down through
// argument decoding, the engine and the store: about 50 µs a step_done,
// a twentieth of the server's CPU per call. A kept goroutine's stack
// stays grown (the collector halves a stack only when a quarter of it is
// used, and collections are rare: see floorGC in package cli).
type warmStacks struct {
	idle chan chan func()
}

// warmIdle is how many goroutines wait for a call at most; more calls at
// once start more, which end when they find no room to wait.
const warmIdle = 8

var warm = warmStacks{idle: make(chan chan func(), warmIdle)}

// run calls fn on a kept goroutine and waits for it; a panic in fn is
// raised again here, in the caller, as if fn had run on its goroutine.
func (w *warmStacks) run(fn func()) {
	var job chan func()
	select {
	case job = <-w.idle:
	default:
		job = make(chan func())
		go w.work(job)
	}
	done := make(chan any, 1)
	job <- func() {
		defer func() { done <- recover() }()
		fn()
	}
	if p := <-done; p != nil {
		panic(p)
	}
}

func (w *warmStacks) work(job chan func()) {
	for fn := range job {
		fn()
		select {
		case w.idle <- job:
		default:
			return
		}
	}
}
