package store

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// A slot file (a head record in .heads/<id>, a lease in <run>/lease)
// holds two slots. The record of write R goes to slot R%2, overwriting the
// record of write R-2 in place, so the record of write R-1 survives a torn
// write; readers take the valid slot with the higher generation. An
// in-place overwrite of allocated blocks needs no journal commit on
// fdatasync, which is what keeps the head record's cost below an append's
// (docs/decisions/0010-head-record.md).
//
// Slot i begins with a primary block of slotPrimary bytes at i*slotPrimary,
// so one read of the first 8 KiB finds both records (List reads thousands);
// a record longer than its block continues in the slot's overflow area at
// slotOverflowAt + i*slotOverflow. The file is sparse: a small record
// uses one block.
const (
	slotPrimary    = 4 << 10
	slotOverflow   = 8 << 10
	slotOverflowAt = 2 * slotPrimary
	// slotMax is the longest record: an 8 KiB summary plus the head
	// record's other members fits.
	slotMax = slotPrimary + slotOverflow
)

// slotOffsets returns where the parts of slot i begin.
func slotOffsets(i int64) (primary, overflow int64) {
	return i * slotPrimary, slotOverflowAt + i*slotOverflow
}

// writeSlot writes a record (ending with a newline) into slot i.
func writeSlot(f *smallFile, i int64, record []byte) error {
	if len(record) > slotMax {
		return fmt.Errorf("a record of %d bytes exceeds its slot (%d)", len(record), slotMax)
	}
	primary, overflow := slotOffsets(i)
	if len(record) > slotPrimary {
		if _, err := f.WriteAt(record[slotPrimary:], overflow); err != nil {
			return err
		}
		record = record[:slotPrimary]
	}
	_, err := f.WriteAt(record, primary)
	return err
}

// readSlots reads the two records of a slot file, each up to and
// including its newline (the bytes found when there is none; nil for a
// slot never written). scratch, of at least 2*slotPrimary bytes (nil
// allocates), receives the one read of both primary blocks; the records
// alias it.
func readSlots(r io.ReaderAt, scratch []byte) ([2][]byte, error) {
	var slots [2][]byte
	if len(scratch) < 2*slotPrimary {
		scratch = make([]byte, 2*slotPrimary)
	}
	buf := scratch[:2*slotPrimary]
	n, err := r.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return slots, err
	}
	buf = buf[:n]
	for i := range slots {
		lo := min(len(buf), i*slotPrimary)
		b := buf[lo:min(len(buf), lo+slotPrimary)]
		if len(b) == 0 || b[0] == 0 { // never written (a hole): records start with '{'
			continue
		}
		if j := bytes.IndexByte(b, '\n'); j >= 0 {
			slots[i] = b[:j+1]
			continue
		}
		if len(b) < slotPrimary {
			slots[i] = b // torn
			continue
		}
		_, overflow := slotOffsets(int64(i))
		more := make([]byte, slotOverflow)
		m, err := r.ReadAt(more, overflow)
		if err != nil && !errors.Is(err, io.EOF) {
			return slots, err
		}
		rec := append(bytes.Clone(b), more[:m]...)
		if j := bytes.IndexByte(rec, '\n'); j >= 0 {
			rec = rec[:j+1]
		}
		slots[i] = rec
	}
	return slots, nil
}

// readHeadRecord reads a run's head record; have is false when the run
// has none.
func (s *FileStore) readHeadRecord(id string) (rec headRecord, have bool, err error) {
	rec, have, f, err := s.openHeadRecord(id, false)
	if f != nil {
		f.Close()
	}
	return rec, have, err
}

// openHeadRecord reads a run's head record and, with write, returns its
// file open for the write that follows (one open per update, not two).
func (s *FileStore) openHeadRecord(id string, write bool) (rec headRecord, have bool, file *smallFile, err error) {
	flag := os.O_RDONLY
	if write {
		flag = os.O_RDWR
	}
	f, err := openSmall(s.headPath(id), flag, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return headRecord{}, false, nil, nil
	}
	if err != nil {
		return headRecord{}, false, nil, fmt.Errorf("run %s: read head record: %w", id, err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
		}
	}()
	slots, err := readSlots(f, nil)
	if err != nil {
		return headRecord{}, false, nil, fmt.Errorf("run %s: read head record: %w", id, err)
	}
	rec, have, err = newestRecord(slots)
	if err != nil {
		return headRecord{}, false, nil, &CorruptError{RunID: id, Part: PartHead, Path: s.headPath(id), Offset: -1, Reason: err.Error()}
	}
	if !have {
		return headRecord{}, false, nil, &CorruptError{RunID: id, Part: PartHead, Path: s.headPath(id), Offset: -1, Reason: "the head record file holds no record"}
	}
	ok = true
	return rec, true, f, nil
}

// writeHeadRecord makes rec the run's head record. open is the head file
// when it exists, open for writing (openHeadRecord), or nil: with a file
// the record overwrites its slot in place (one write, and an fdatasync
// when durable; an Update starts the flush in the background, for the
// run's next write to wait for, see commit); else the file is made whole
// under a temp name, fsynced and renamed into place, so a head file never
// exists without a valid record.
func (s *FileStore) writeHeadRecord(rec headRecord, open *smallFile, durable bool) error {
	line := encodeHeadRecord(rec)
	path := s.headPath(rec.RunID)
	if open != nil {
		err := writeSlot(open, rec.Rev%2, line)
		if err == nil && durable {
			err = open.Datasync()
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
	f, err := openSmall(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, filePerm)
	if err != nil {
		return fmt.Errorf("run %s: create head record: %w", rec.RunID, err)
	}
	err = writeSlot(f, rec.Rev%2, line)
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
		err = syncDir(dir)
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
		if err := syncDir(filepath.Dir(d)); err != nil {
			return fmt.Errorf("state root: %w", err)
		}
	}
	return nil
}
