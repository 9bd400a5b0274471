package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// A run's lease lives in <run>/lease, a slot file (fileheads.go): the
// record of write G in slot G%2, overwritten in place so the previous
// record survives a torn write. Lease operations lock that file itself
// (flock), never run.lock, so they neither wait for nor delay an Update;
// a renewal is one small write without fsync (docs/storage.md, "Leases").
// AcquireLease implements Store.
func (s *FileStore) AcquireLease(ctx context.Context, runID, owner string, ttl time.Duration) (Lease, error) {
	if err := checkLeaseArgs(runID, owner, ttl); err != nil {
		return Lease{}, err
	}
	return s.leaseOp(ctx, runID, func(cur leaseRecord, now time.Time) (leaseRecord, bool, error) {
		return grantLease(runID, cur, owner, now, ttl)
	})
}

// RenewLease implements Store.
func (s *FileStore) RenewLease(ctx context.Context, runID string, l Lease, ttl time.Duration) (Lease, error) {
	if err := checkLeaseArgs(runID, l.Owner, ttl); err != nil {
		return Lease{}, err
	}
	return s.leaseOp(ctx, runID, func(cur leaseRecord, now time.Time) (leaseRecord, bool, error) {
		next, err := renewLease(runID, cur, l, now, ttl)
		return next, false, err
	})
}

// ReleaseLease implements Store.
func (s *FileStore) ReleaseLease(ctx context.Context, runID string, l Lease) error {
	_, err := s.leaseOp(ctx, runID, func(cur leaseRecord, now time.Time) (leaseRecord, bool, error) {
		next, err := releaseLease(runID, cur, l)
		return next, false, err
	})
	return err
}

// leaseOp reads the lease record under the lease file's lock, lets decide
// compute the next one, and writes it (fdatasynced when durable).
func (s *FileStore) leaseOp(ctx context.Context, runID string, decide func(cur leaseRecord, now time.Time) (leaseRecord, bool, error)) (Lease, error) {
	if err := ValidateRunID(runID); err != nil {
		return Lease{}, err
	}
	if err := ctx.Err(); err != nil {
		return Lease{}, err
	}
	path := s.runPath(runID, leaseFile)
	_, statErr := os.Stat(path)
	created := errors.Is(statErr, fs.ErrNotExist)
	lk, err := acquireLock(ctx, runID, path, true, s.lockTimeout, false)
	if errors.Is(err, errNoRunDir) {
		return Lease{}, s.missingRun(runID)
	}
	if err != nil {
		return Lease{}, err
	}
	defer lk.release()
	f, err := openSmall(path, os.O_RDWR, 0)
	if err != nil {
		return Lease{}, fmt.Errorf("run %s: lease: %w", runID, err)
	}
	defer f.Close()
	cur, err := readLease(runID, f, path)
	if err != nil {
		return Lease{}, err
	}
	next, durable, err := decide(cur, leaseNow())
	if err != nil {
		return Lease{}, err
	}
	if err := writeSlot(f, next.Gen%2, encodeLease(next)); err != nil {
		return Lease{}, fmt.Errorf("run %s: write lease: %w", runID, err)
	}
	if durable {
		if err := f.Datasync(); err != nil {
			return Lease{}, fmt.Errorf("run %s: write lease: %w", runID, err)
		}
		if created {
			if err := syncDir(s.runDir(runID)); err != nil {
				return Lease{}, fmt.Errorf("run %s: write lease: %w", runID, err)
			}
		}
	}
	return next.lease(), nil
}

// readLease reads the lease record of an open lease file (the zero record
// when none was ever written).
func readLease(runID string, f *smallFile, path string) (leaseRecord, error) {
	slots, err := readSlots(f, nil)
	if err != nil {
		return leaseRecord{}, fmt.Errorf("run %s: read lease: %w", runID, err)
	}
	rec, _, err := newestLease(slots)
	if err != nil {
		return leaseRecord{}, &CorruptError{RunID: runID, Part: PartRun, Path: path, Offset: -1, Reason: err.Error()}
	}
	return rec, nil
}

// currentLease is the lease a snapshot shows. It takes no lock: a writer
// overwrites only the slot that does not hold the current record, so a
// read sees that record unless two writes overlap it, and then reads
// again. An unreadable lease file shows as no lease: the lease is advice
// to the engine, and Acquire reports the damage.
func (s *FileStore) currentLease(rf runFS) *Lease {
	f, err := rf.open(leaseFile, os.O_RDONLY, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	for range 3 {
		slots, err := readSlots(f, nil)
		if err != nil {
			return nil
		}
		if rec, _, err := newestLease(slots); err == nil {
			return rec.active(leaseNow())
		}
	}
	return nil
}
