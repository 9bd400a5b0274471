package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stratum-go/stratum/internal/pgtest"
	"github.com/stratum-go/stratum/store"
)

// TestCopyFilesPostgresFiles copies a run with a repair event from files
// to PostgreSQL and back: every line arrives byte for byte, the heads are
// equal, each copy verifies against the source's head as an anchor, and a
// second copy of the same id is refused.
func TestCopyFilesPostgresFiles(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "flows")
	files, err := store.NewFileStore(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := files.Create(ctx, "c", store.Change{State: []byte(`{"w":0}`), Summary: []byte(`{"status":"running"}`), Events: evs(1, 2)})
	if err != nil {
		t.Fatal(err)
	}
	// What an interrupted write leaves, kept aside by the next write.
	enc, err := store.EncodeWrite("c", h, evs(10, 1))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(root, "c", "events.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(append(enc[0].Line, '\n'))
	f.Close()
	for i := range 3 {
		if _, err := files.Update(ctx, "c", func(cur *store.Snapshot) (*store.Change, error) {
			return &store.Change{State: fmt.Appendf(nil, `{"w":%d}`, i+1), Events: evs(int(cur.Head.Seq)+1, 2)}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	src, err := files.ExportRun(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := files.Verify(ctx, "c", store.VerifyOptions{})
	if err != nil || len(rep.Repairs) != 1 {
		t.Fatalf("the source: %+v, %v; want one repair", rep, err)
	}
	pg := open(t, pgtest.DSN(t), 0)
	back, err := store.NewFileStore(filepath.Join(t.TempDir(), "flows"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, dst := range []interface {
		store.Store
		store.Copier
	}{pg, back} {
		from := src
		if dst == back {
			if from, err = pg.ExportRun(ctx, "c"); err != nil {
				t.Fatal(err)
			}
		}
		got, err := dst.ImportRun(ctx, from)
		if err != nil || got != rep.Head {
			t.Fatalf("ImportRun: %+v, %v; want head %+v", got, err, rep.Head)
		}
		arrived, err := dst.Verify(ctx, "c", store.VerifyOptions{Head: rep.Head.Hash})
		if err != nil || arrived.Head != rep.Head || arrived.Writes != rep.Writes || len(arrived.Repairs) != 1 {
			t.Errorf("the copy verifies as %+v, %v; want %+v", arrived, err, rep)
		}
		out, err := dst.ExportRun(ctx, "c")
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Lines) != len(src.Lines) || !bytes.Equal(out.State, src.State) || !bytes.Equal(out.Summary, src.Summary) || len(out.Kept) != 1 || !bytes.Equal(out.Kept[0].Data, src.Kept[0].Data) {
			t.Fatalf("the copy differs: %d lines, state %s, summary %s, kept %d", len(out.Lines), out.State, out.Summary, len(out.Kept))
		}
		for i := range src.Lines {
			if !bytes.Equal(out.Lines[i], src.Lines[i]) {
				t.Errorf("line %d differs:\n%s\n%s", i+1, out.Lines[i], src.Lines[i])
			}
		}
		if _, err := dst.ImportRun(ctx, src); !errors.Is(err, store.ErrRunExists) {
			t.Errorf("a second copy: %v, want ErrRunExists", err)
		}
	}
	// A copy whose line was changed is refused, and leaves nothing.
	bad := *src
	bad.RunID = "d"
	if _, err := pg.ImportRun(ctx, &bad); !errors.Is(err, store.ErrInvalidInput) {
		t.Errorf("a copy under another id (its genesis hash is not the id's): %v, want ErrInvalidInput", err)
	}
	if _, err := pg.Load(ctx, "d"); !errors.Is(err, store.ErrRunNotFound) {
		t.Errorf("a refused copy left a run: %v", err)
	}
}
