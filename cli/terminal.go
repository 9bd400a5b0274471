package cli

import (
	"bufio"
	"context"
	"io"
	"os"
	"sync"
)

// terminal shares one input between the questions of a local run: gate
// decisions and the answers of the human agent. One goroutine reads lines
// into a queue; a gate question, while open, takes the lines; otherwise
// lines go to the human agent. Lines typed ahead wait in the queue, so
// answers can be scripted.
type terminal struct {
	mu    sync.Mutex
	cond  *sync.Cond
	queue []string
	eof   bool
	gates int // open gate questions
	ask   sync.Mutex
}

func newTerminal(in io.Reader) *terminal {
	t := &terminal{}
	t.cond = sync.NewCond(&t.mu)
	go func() {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			t.mu.Lock()
			t.queue = append(t.queue, sc.Text())
			t.cond.Broadcast()
			t.mu.Unlock()
		}
		t.mu.Lock()
		t.eof = true
		t.cond.Broadcast()
		t.mu.Unlock()
	}()
	return t
}

// next returns the next line for a gate question (gate) or for the human
// agent; ok is false at end of input or when ctx ends.
func (t *terminal) next(ctx context.Context, gate bool) (string, bool) {
	stop := context.AfterFunc(ctx, func() {
		t.mu.Lock()
		t.cond.Broadcast()
		t.mu.Unlock()
	})
	defer stop()
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		if ctx.Err() != nil {
			return "", false
		}
		if len(t.queue) > 0 && (gate || t.gates == 0) {
			line := t.queue[0]
			t.queue = t.queue[1:]
			return line, true
		}
		if t.eof {
			return "", false
		}
		t.cond.Wait()
	}
}

// openGate starts a gate question (one at a time).
func (t *terminal) openGate() {
	t.ask.Lock()
	t.mu.Lock()
	t.gates++
	t.mu.Unlock()
}

func (t *terminal) closeGate() {
	t.mu.Lock()
	t.gates--
	t.cond.Broadcast()
	t.mu.Unlock()
	t.ask.Unlock()
}

// humanInput is the human agent's view of the terminal.
type humanInput struct {
	t   *terminal
	buf []byte
}

func (h *humanInput) Read(p []byte) (int, error) {
	if len(h.buf) == 0 {
		line, ok := h.t.next(context.Background(), false)
		if !ok {
			return 0, io.EOF
		}
		h.buf = []byte(line + "\n")
	}
	n := copy(p, h.buf)
	h.buf = h.buf[n:]
	return n, nil
}

// isTerminal reports whether r is an interactive terminal: a character
// device other than the null device (which is what a job without input
// usually gets).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	if null, err := os.Stat(os.DevNull); err == nil && os.SameFile(fi, null) {
		return false
	}
	return true
}
