package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestFileCopy exports a run and imports it into another root: the log
// arrives byte for byte, the copy verifies against the source's head, and
// copies that are taken or changed are refused, leaving nothing.
func TestFileCopy(t *testing.T) {
	ctx := context.Background()
	src := newStore(t, nil)
	if _, err := src.Create(ctx, "c", Change{State: []byte(`{"a":1}`), Summary: []byte(`{"s":1}`), Events: historyEvents(3)}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := src.Update(ctx, "c", func(*Snapshot) (*Change, error) {
			return &Change{State: []byte(`{"a":2}`), Events: historyEvents(2)}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := src.Verify(ctx, "c", VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := src.ExportRun(ctx, "c")
	if err != nil || len(c.Lines) != 9 {
		t.Fatalf("ExportRun: %v, %v", c, err)
	}
	dst := newStore(t, nil)
	if h, err := dst.ImportRun(ctx, c); err != nil || h != rep.Head {
		t.Fatalf("ImportRun: %+v, %v; want %+v", h, err, rep.Head)
	}
	if got, err := dst.Verify(ctx, "c", VerifyOptions{Head: rep.Head.Hash}); err != nil || got.Writes != rep.Writes {
		t.Errorf("the copy: %+v, %v", got, err)
	}
	a, _ := os.ReadFile(filepath.Join(src.Root(), "c", eventsFile))
	b, _ := os.ReadFile(filepath.Join(dst.Root(), "c", eventsFile))
	if !bytes.Equal(a, b) {
		t.Error("the copied log differs from the source's")
	}
	if snap, err := dst.Load(ctx, "c"); err != nil || string(snap.State) != `{"a":2}` || string(snap.Summary) != `{"s":1}` {
		t.Errorf("the copy loads as %+v, %v", snap, err)
	}
	if _, err := dst.ImportRun(ctx, c); !errors.Is(err, ErrRunExists) {
		t.Errorf("a second import: %v, want ErrRunExists", err)
	}
	changed := *c
	changed.Lines = append([][]byte{}, c.Lines...)
	changed.Lines[4] = bytes.Replace(c.Lines[4], []byte(`"ok":true`), []byte(`"ok":false`), 1)
	other := newStore(t, nil)
	if _, err := other.ImportRun(ctx, &changed); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("a changed copy: %v, want ErrInvalidInput", err)
	}
	if _, err := other.Load(ctx, "c"); !errors.Is(err, ErrRunNotFound) {
		t.Errorf("a refused import left a run: %v", err)
	}
}
