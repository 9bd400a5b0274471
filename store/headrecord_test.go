package store

import (
	"strings"
	"testing"
	"time"
)

// newestRecord checks only the slot that claims the higher rev, and the
// other when that one fails; the result must be what checking both gives:
// the valid slot with the higher rev, slot 0 on a tie.
func TestNewestRecord(t *testing.T) {
	rec := func(rev int64) []byte {
		return encodeHeadRecord(headRecord{RunID: "run-1", Rev: rev, Seq: rev, Hash: strings.Repeat("a", 64),
			State: strings.Repeat("b", 64), SavedAt: time.Unix(rev, 0), Summary: []byte(`{"n":1}`)})
	}
	// torn claims a high rev but fails its check, as a half-written
	// overwrite does.
	torn := func(rev int64) []byte {
		b := rec(rev)
		return b[:len(b)-5]
	}
	tests := []struct {
		name    string
		slots   [2][]byte
		wantRev int64 // 0: none found
		wantErr bool
	}{
		{"both valid, slot 1 newer", [2][]byte{rec(4), rec(5)}, 5, false},
		{"both valid, slot 0 newer", [2][]byte{rec(6), rec(5)}, 6, false},
		{"newer claim torn", [2][]byte{rec(4), torn(5)}, 4, false},
		{"newer claim torn in slot 0", [2][]byte{torn(9), rec(5)}, 5, false},
		{"a bogus huge claim", [2][]byte{rec(4), []byte(`{"check":"` + strings.Repeat("0", 64) + `","format":"` + headFormat + `","hash":"` + strings.Repeat("a", 64) + `","rev":99999}` + "\n")}, 4, false},
		{"one empty", [2][]byte{nil, rec(1)}, 1, false},
		{"both empty", [2][]byte{nil, nil}, 0, false},
		{"both torn", [2][]byte{torn(2), torn(3)}, 0, true},
		{"garbage and valid", [2][]byte{[]byte("xyz\n"), rec(3)}, 3, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, ok, err := newestRecord(tt.slots)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				if !strings.Contains(err.Error(), "slot 0") || !strings.Contains(err.Error(), "slot 1") {
					t.Errorf("error %q does not name both slots", err)
				}
				return
			}
			if ok != (tt.wantRev != 0) || r.Rev != tt.wantRev {
				t.Errorf("got rev %d (found %v), want %d", r.Rev, ok, tt.wantRev)
			}
		})
	}
}
