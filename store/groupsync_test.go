package store

import (
	"errors"
	"sync"
	"testing"
)

// fakeFlush is a flush the test releases one at a time: each call sends
// its number on started, then returns what the test sends on release.
type fakeFlush struct {
	started chan int
	release chan error
	n       int
}

func newFakeFlush() *fakeFlush {
	return &fakeFlush{started: make(chan int), release: make(chan error)}
}

func (f *fakeFlush) flush() error {
	f.n++
	f.started <- f.n
	return <-f.release
}

// waiting returns once n waits have joined the batch that has not
// started.
func waiting(g *groupSyncer, n int) {
	for {
		g.mu.Lock()
		ok := g.next != nil && g.next.waiters == n
		g.mu.Unlock()
		if ok {
			return
		}
	}
}

// TestGroupSyncerCoversOnlyLaterWaits: a wait that arrives while a flush
// runs is not answered by it (that flush may have started before the
// write's data existed) but by the next one, which every wait that
// arrived meanwhile shares.
func TestGroupSyncerCoversOnlyLaterWaits(t *testing.T) {
	f := newFakeFlush()
	g := &groupSyncer{flush: f.flush}
	first := make(chan error)
	go func() { first <- g.begin().wait() }()
	if n := <-f.started; n != 1 {
		t.Fatalf("flush %d started first", n)
	}
	const later = 5
	var wg sync.WaitGroup
	errs := make(chan error, later)
	for range later {
		tk := g.begin()
		wg.Go(func() { errs <- tk.wait() })
	}
	waiting(g, later)
	f.release <- nil
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		t.Fatalf("a wait that arrived during flush 1 returned with it (%v)", err)
	default:
	}
	if n := <-f.started; n != 2 {
		t.Fatalf("flush %d started second", n)
	}
	f.release <- nil
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got, covered := g.flushes.Load(), g.covered.Load(); got != 2 || covered != 1+later {
		t.Fatalf("%d flushes answered %d waits; want 2 and %d", got, covered, 1+later)
	}
}

// TestGroupSyncerErrors: a failed flush fails every wait of its batch
// and every write that began before it returned, even one a later flush
// covers successfully; a write that begins afterwards is not failed.
func TestGroupSyncerErrors(t *testing.T) {
	f := newFakeFlush()
	g := &groupSyncer{flush: f.flush}
	boom := errors.New("EIO")
	first := make(chan error)
	go func() { first <- g.begin().wait() }()
	<-f.started
	inBatch := make(chan error, 2)
	for range 2 {
		tk := g.begin()
		go func() { inBatch <- tk.wait() }()
	}
	waiting(g, 2)
	f.release <- nil
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	<-f.started // flush 2, for the batch of two, which will fail
	// Began (and wrote) while flush 2 ran, waits for flush 3.
	began := g.begin()
	beganErr := make(chan error)
	go func() { beganErr <- began.wait() }()
	waiting(g, 1)
	f.release <- boom
	for range 2 {
		if err := <-inBatch; !errors.Is(err, boom) {
			t.Fatalf("a wait of the failed batch returned %v", err)
		}
	}
	<-f.started
	f.release <- nil
	if err := <-beganErr; !errors.Is(err, errEarlierFlush) {
		t.Fatalf("a write begun before the failed flush returned was acknowledged: %v", err)
	}
	after := make(chan error)
	go func() { after <- g.begin().wait() }()
	<-f.started
	f.release <- nil
	if err := <-after; err != nil {
		t.Fatalf("a write begun after the failure: %v", err)
	}
}
