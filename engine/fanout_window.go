package engine

import (
	"fmt"
	"slices"
)

// itemWindow is the part of a fanout's items that an item's report can
// change or must look at, so that scheduling, the ready list and the
// document cost what is live, not what the fanout holds (docs/engine.md,
// "Cost"). Outside it are two kinds of items, each numerous in a large
// fanout and each never looked at item by item:
//   - chunked items: settled and in an engine.fanout_items record; they
//     never change again;
//   - the pristine tail: every item from hi on is as newItem made it
//     (not yet started), so pending, not active, and not in the document.
//
// The window is derived, never persisted: built from the items on first
// use after a decode, and kept as items enter it (reach) and leave it
// (persistFanout chunks them). A change that may touch any item (a
// checkpoint's restore) drops it (forgetWindow), and it is built again.
type itemWindow struct {
	ok bool
	// live is every item before hi that is not chunked, in index order.
	live []*itemState
	// hi: every item from hi on is pristine.
	hi int
}

// window returns the fanout's window, building it when it has none.
// Building costs one pass over the items, as decoding them did.
func (f *fanoutState) window() *itemWindow {
	if f.win.ok {
		return &f.win
	}
	hi := len(f.Items)
	for hi > 0 && f.pristineItem(f.Items[hi-1]) {
		hi--
	}
	live := make([]*itemState, 0, min(hi, 2*fanoutChunkSize))
	for _, it := range f.Items[:hi] {
		if !it.chunked {
			live = append(live, it)
		}
	}
	f.win = itemWindow{ok: true, live: live, hi: hi}
	return &f.win
}

// liveItems is the window's items: the only ones that can be ready,
// running, settled but not yet recorded, or in the document.
func (f *fanoutState) liveItems() []*itemState { return f.window().live }

// reach brings item i, and every pristine item before it, into the
// window, before a change to it: an item from hi on is pristine only
// while nothing has touched it.
func (f *fanoutState) reach(i int) {
	w := f.window()
	for ; w.hi <= i && w.hi < len(f.Items); w.hi++ {
		w.live = append(w.live, f.Items[w.hi])
	}
}

// forgetWindow drops the window after a change that may touch any item.
func (f *fanoutState) forgetWindow() { f.win = itemWindow{} }

// unstarted reports whether items wait in the pristine tail.
func (f *fanoutState) unstarted() bool { return f.window().hi < len(f.Items) }

// dropChunked takes the items persistFanout just recorded out of the
// window.
func (f *fanoutState) dropChunked() {
	w := f.window()
	w.live = slices.DeleteFunc(w.live, func(it *itemState) bool { return it.chunked })
}

// checkWindow (tests: Engine.verifyWrites) fails when the window is not
// what building it again would give: an item changed outside it.
func (f *fanoutState) checkWindow(stepID string) error {
	if !f.win.ok {
		return nil
	}
	got := f.win
	f.forgetWindow()
	want := *f.window()
	f.win = got
	if got.hi < want.hi {
		return fmt.Errorf("fanout %s: item %d changed outside its window (which ends at %d)", stepID, want.hi-1, got.hi)
	}
	var live []*itemState
	for _, it := range f.Items[:got.hi] {
		if !it.chunked {
			live = append(live, it)
		}
	}
	if !slices.Equal(got.live, live) {
		return fmt.Errorf("fanout %s: the window holds %d live items, the items %d", stepID, len(got.live), len(live))
	}
	return nil
}
