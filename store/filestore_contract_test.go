package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stratum-go/stratum/store"
	"github.com/stratum-go/stratum/store/storetest"
)

func TestFileStoreContract(t *testing.T) {
	open := func(root string) *store.FileStore {
		s, err := store.NewFileStore(root, &store.Options{LockTimeout: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	storetest.Run(t, func(t *testing.T) store.Store { return fileTamperer{open(filepath.Join(t.TempDir(), "flows"))} },
		storetest.Reopen(func(t *testing.T, s store.Store) store.Store { return open(s.(fileTamperer).Root()) }))
}

// fileTamperer gives the contract suite write access to a file store's
// files, by the layout docs/storage.md documents.
type fileTamperer struct{ *store.FileStore }

func (f fileTamperer) path(runID string, part string) string {
	switch part {
	case store.PartState:
		return filepath.Join(f.Root(), runID, "state.json")
	case store.PartEvents:
		return filepath.Join(f.Root(), runID, "events.jsonl")
	case store.PartHead:
		return filepath.Join(f.Root(), ".heads", runID)
	}
	panic("unknown part " + part)
}

func (f fileTamperer) TamperEvent(runID string, seq int64, edit func([]byte) []byte) error {
	path := f.path(runID, store.PartEvents)
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	if seq < 1 || seq > int64(len(lines)) || len(lines[seq-1]) == 0 {
		return fmt.Errorf("no line %d", seq)
	}
	out := edit(bytes.TrimSuffix(bytes.Clone(lines[seq-1]), []byte("\n")))
	if out == nil {
		lines = append(lines[:seq-1], lines[seq:]...)
	} else {
		lines[seq-1] = append(out, '\n')
	}
	return os.WriteFile(path, bytes.Join(lines, nil), 0o600)
}

func (f fileTamperer) AppendLog(runID string, data []byte) error {
	fh, err := os.OpenFile(f.path(runID, store.PartEvents), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer fh.Close()
	_, err = fh.Write(data)
	return err
}

func (f fileTamperer) SaveParts(runID string, parts ...string) (func() error, error) {
	saved := map[string][]byte{}
	for _, p := range parts {
		b, err := os.ReadFile(f.path(runID, p))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		saved[p] = b // nil: absent
	}
	return func() error {
		for p, b := range saved {
			path := f.path(runID, p)
			if b == nil {
				os.Remove(path)
				continue
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				return err
			}
			if err := os.WriteFile(path, b, 0o600); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

func (f fileTamperer) RemoveRun(runID string, headRecordToo bool) error {
	if err := os.RemoveAll(filepath.Join(f.Root(), runID)); err != nil {
		return err
	}
	if headRecordToo {
		return os.Remove(f.path(runID, store.PartHead))
	}
	return nil
}
