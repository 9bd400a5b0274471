package engine

import (
	"slices"
	"strings"
	"testing"
)

// windowFanout is a fanout of n items, of which those in chunked are
// settled and recorded and those in touched have started.
func windowFanout(gen0 int64, n int, chunked, touched []int) *fanoutState {
	f := &fanoutState{Gen0: gen0, Items: make([]*itemState, n)}
	for i := range f.Items {
		f.Items[i] = f.newItem(i)
	}
	for _, i := range touched {
		f.Items[i].Status = StepReady
	}
	for _, i := range chunked {
		f.Items[i].Status, f.Items[i].chunked = StepSucceeded, true
	}
	return f
}

func indexes(items []*itemState) []int {
	out := []int{}
	for _, it := range items {
		out = append(out, it.Index)
	}
	return out
}

func TestFanoutWindow(t *testing.T) {
	for _, tc := range []struct {
		name             string
		gen0             int64
		n                int
		chunked, touched []int
		live             []int
		hi               int
	}{
		{"unstarted", 1, 5, nil, nil, []int{}, 0},
		{"started in order", 1, 6, []int{0, 1}, []int{2, 3}, []int{2, 3}, 4},
		{"a straggler among recorded items", 1, 6, []int{0, 2, 3}, []int{1, 4}, []int{1, 4}, 5},
		{"a pristine item before a started one", 1, 6, nil, []int{3}, []int{0, 1, 2, 3}, 4},
		{"all recorded", 1, 3, []int{0, 1, 2}, nil, []int{}, 3},
		// A document written before items had first generations: no item
		// passes for pristine, so all are in the window.
		{"no first generation", 0, 4, []int{0}, nil, []int{1, 2, 3}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := windowFanout(tc.gen0, tc.n, tc.chunked, tc.touched)
			w := f.window()
			if got := indexes(w.live); !slices.Equal(got, tc.live) || w.hi != tc.hi {
				t.Fatalf("window: live %v hi %d, want %v %d", got, w.hi, tc.live, tc.hi)
			}
			if f.unstarted() != (tc.hi < tc.n) {
				t.Fatalf("unstarted %v with hi %d of %d", f.unstarted(), tc.hi, tc.n)
			}
			if err := f.checkWindow("fan"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// reach brings items into the window before they change, and the check
// finds an item changed outside it.
func TestFanoutWindowReach(t *testing.T) {
	f := windowFanout(1, 8, nil, []int{0})
	f.window()
	f.reach(2)
	f.Items[2].Status = StepReady
	if got := indexes(f.liveItems()); !slices.Equal(got, []int{0, 1, 2}) || f.win.hi != 3 {
		t.Fatalf("after reach(2): live %v hi %d", got, f.win.hi)
	}
	if err := f.checkWindow("fan"); err != nil {
		t.Fatal(err)
	}
	f.reach(100) // past the end: every item
	if f.win.hi != 8 || f.unstarted() {
		t.Fatalf("reach past the end: hi %d", f.win.hi)
	}

	f = windowFanout(1, 8, nil, []int{0})
	f.window()
	f.Items[5].Status = StepReady // changed without reach
	if err := f.checkWindow("fan"); err == nil || !strings.Contains(err.Error(), "item 5 changed outside its window") {
		t.Fatalf("checkWindow: %v", err)
	}
}

// Items recorded in a chunk leave the window; the document keeps what is
// live and started.
func TestFanoutWindowDropsRecordedItems(t *testing.T) {
	f := windowFanout(1, 6, nil, []int{0, 1, 2})
	f.window()
	f.Items[0].chunked, f.Items[1].chunked = true, true
	f.dropChunked()
	if got := indexes(f.liveItems()); !slices.Equal(got, []int{2}) {
		t.Fatalf("after dropChunked: live %v", got)
	}
	if err := f.checkWindow("fan"); err != nil {
		t.Fatal(err)
	}
	f.Items[2].chunked = true // recorded, not dropped
	if err := f.checkWindow("fan"); err == nil {
		t.Fatal("checkWindow passed a recorded item left in the window")
	}
}
