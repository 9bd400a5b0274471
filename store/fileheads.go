package store

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/stratum-go/stratum/internal/atomicfile"
)

// A head file (.heads/<id>) holds two slots of headSlotSize bytes. The
// record of write R goes to slot R%2, overwriting the record of write R-2
// in place, so the record of write R-1 survives a torn write; readers take
// the valid slot with the higher rev. An in-place overwrite of allocated
// blocks needs no journal commit on fdatasync, which is what keeps the
// head record's cost below an append's (docs/decisions/0010-head-record.md).
// The file is sparse: a small record uses one block of each slot.
const (
	headSlotSize = 12 << 10 // a 8 KiB summary plus the record's other members
	// headFirstRead is read of each slot first; a record is almost always
	// shorter.
	headFirstRead = 4 << 10
)

// readSlots reads the two slots of a slot file: the bytes of each up to
// and including its first newline (all that was read when there is none).
func readSlots(r io.ReaderAt, slotSize int64) ([2][]byte, error) {
	var slots [2][]byte
	for i := range slots {
		buf := make([]byte, min(headFirstRead, slotSize))
		n, err := r.ReadAt(buf, int64(i)*slotSize)
		if err != nil && !errors.Is(err, io.EOF) {
			return slots, err
		}
		buf = buf[:n]
		if bytes.IndexByte(buf, '\n') < 0 && int64(n) == min(headFirstRead, slotSize) && slotSize > headFirstRead {
			full := make([]byte, slotSize)
			n, err = r.ReadAt(full, int64(i)*slotSize)
			if err != nil && !errors.Is(err, io.EOF) {
				return slots, err
			}
			buf = full[:n]
		}
		if j := bytes.IndexByte(buf, '\n'); j >= 0 {
			buf = buf[:j+1]
		}
		slots[i] = buf
	}
	return slots, nil
}

// readHeadRecord reads a run's head record; have is false when the run
// has none.
func (s *FileStore) readHeadRecord(id string) (rec headRecord, have bool, err error) {
	f, err := os.Open(s.headPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return headRecord{}, false, nil
	}
	if err != nil {
		return headRecord{}, false, fmt.Errorf("run %s: read head record: %w", id, err)
	}
	defer f.Close()
	slots, err := readSlots(f, headSlotSize)
	if err != nil {
		return headRecord{}, false, fmt.Errorf("run %s: read head record: %w", id, err)
	}
	rec, have, err = newestRecord(slots)
	if err != nil {
		return headRecord{}, false, &CorruptError{RunID: id, Part: PartHead, Path: s.headPath(id), Offset: -1, Reason: err.Error()}
	}
	if !have {
		return headRecord{}, false, &CorruptError{RunID: id, Part: PartHead, Path: s.headPath(id), Offset: -1, Reason: "the head record file holds no record"}
	}
	return rec, true, nil
}

// writeHeadRecord makes rec the run's head record, durably. exists says
// whether the head file is there already: then the record overwrites its
// slot in place (one write and fdatasync); else the file is made whole
// under a temp name and renamed into place, so a head file never exists
// without a valid record.
func (s *FileStore) writeHeadRecord(rec headRecord, exists bool) error {
	line := encodeHeadRecord(rec)
	if len(line) > headSlotSize {
		return fmt.Errorf("run %s: head record of %d bytes exceeds its slot", rec.RunID, len(line))
	}
	off := (rec.Rev % 2) * headSlotSize
	path := s.headPath(rec.RunID)
	if exists {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err == nil {
			_, err = f.WriteAt(line, off)
			if err == nil {
				err = datasync(f)
			}
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			return fmt.Errorf("run %s: write head record: %w", rec.RunID, err)
		}
		return nil
	}
	dir := filepath.Dir(path)
	if err := s.ensureDir(dir); err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+rec.RunID+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, filePerm)
	if err != nil {
		return fmt.Errorf("run %s: create head record: %w", rec.RunID, err)
	}
	err = f.Truncate(2 * headSlotSize)
	if err == nil {
		_, err = f.WriteAt(line, off)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = atomicfile.SyncDir(dir)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("run %s: create head record: %w", rec.RunID, err)
	}
	return nil
}

// ensureDir makes dir (and its missing parents) with dirPerm, fsyncing
// each new entry in its parent so a crash cannot lose it.
func (s *FileStore) ensureDir(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	var created []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil || filepath.Dir(d) == d {
			break
		}
		created = append(created, d)
	}
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return fmt.Errorf("state root: %w", err)
	}
	for _, d := range created {
		if err := atomicfile.SyncDir(filepath.Dir(d)); err != nil {
			return fmt.Errorf("state root: %w", err)
		}
	}
	return nil
}
