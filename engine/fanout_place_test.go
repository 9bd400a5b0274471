package engine

import (
	"strings"
	"testing"
)

// placeItems puts a fanout's items in order from the state, the records
// of settled items and the pristine rest, and refuses what does not add up
// to one item per index.
func TestFanoutPlaceItems(t *testing.T) {
	item := func(i int) itemState { return itemState{Index: i, Status: StepSucceeded, Attempts: []Attempt{}} }
	live := func(is ...int) []*itemState {
		var out []*itemState
		for _, i := range is {
			it := item(i)
			it.Status = StepRunning
			out = append(out, &it)
		}
		return out
	}
	chunk := func(is ...int) []itemState {
		var out []itemState
		for _, i := range is {
			out = append(out, item(i))
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		gen0   int64
		live   []*itemState
		chunks [][]itemState
		total  int
		want   string // statuses by index ("r" running, "s" succeeded, "p" pending), or the error
	}{
		{"state and records", 0, live(2), [][]itemState{chunk(0, 1), chunk(3)}, -1, "ssrs"},
		{"pristine rest", 7, live(1), [][]itemState{chunk(0)}, 4, "srpp"},
		{"only pristine", 7, nil, nil, 3, "ppp"},
		{"a record repeats the state", 0, live(1), [][]itemState{chunk(0, 1)}, -1, "repeats an item"},
		{"two records repeat", 7, nil, [][]itemState{chunk(0), chunk(0)}, 3, "repeats an item"},
		{"a gap", 0, live(0), [][]itemState{chunk(2)}, -1, "not one of its 2 items"},
		{"beyond the array", 7, live(5), nil, 3, "not one of its 3 items"},
		{"more items than elements", 7, live(0, 1), [][]itemState{chunk(2, 3)}, 3, "holds 4 items for 3 elements"},
		{"a null item in the state", 7, []*itemState{nil}, nil, 3, "is null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fanoutState{Gen0: tc.gen0, Items: tc.live}
			items, err := f.placeItems(tc.chunks, tc.total)
			var got strings.Builder
			if err != nil {
				got.WriteString(err.Error())
			}
			for i, it := range items {
				if it.Index != i {
					t.Fatalf("item %d at position %d", it.Index, i)
				}
				got.WriteByte(map[StepStatus]byte{StepRunning: 'r', StepSucceeded: 's', StepPending: 'p'}[it.Status])
				if it.Status == StepSucceeded && !it.chunked {
					t.Fatalf("item %d from a record is not marked chunked", i)
				}
			}
			if !strings.Contains(got.String(), tc.want) {
				t.Fatalf("got %q, want %q", got.String(), tc.want)
			}
		})
	}
	// The copies are the state's own: changing one leaves the record's
	// decoded items as they were.
	shared := [][]itemState{chunk(0)}
	items, err := (&fanoutState{}).placeItems(shared, -1)
	if err != nil {
		t.Fatal(err)
	}
	items[0].Status = StepFailed
	if shared[0][0].Status != StepSucceeded || shared[0][0].chunked {
		t.Fatal("placeItems changed the shared record's item")
	}
}
