package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// The lease rules, shared by every backend (docs/storage.md, "Leases").
// Expiry is judged only on the store's own clock: the file and memory
// stores use this machine's wall clock, a SQL store the database's. A
// holder never compares its clock with the store's: it counts ttl on its
// own monotonic clock from the moment it sent the request, which makes
// it give the lease up no later than the store expires it, up to the two
// clocks' rate difference over one ttl.

// maxLeaseOwner bounds Lease.Owner.
const maxLeaseOwner = 256

// leaseRecord is a run's lease as stored: the current or last grant.
type leaseRecord struct {
	Owner   string    // "" once released (the epoch stays)
	Epoch   int64     // the last grant's fencing token
	Expires time.Time // UTC, on the store's clock
	Gen     int64     // counts writes of the record (the file store's slot)
}

func (r leaseRecord) lease() Lease { return Lease{Owner: r.Owner, Epoch: r.Epoch, Expires: r.Expires} }

// live reports whether the record is a held, unexpired lease at now.
func (r leaseRecord) live(now time.Time) bool { return r.Owner != "" && now.Before(r.Expires) }

// active returns the lease a Snapshot shows at now.
func (r leaseRecord) active(now time.Time) *Lease {
	if !r.live(now) {
		return nil
	}
	l := r.lease()
	return &l
}

// leaseNow is the store's clock: wall time in UTC, without the monotonic
// reading (records are compared across processes).
func leaseNow() time.Time { return time.Now().UTC() }

func checkLeaseArgs(runID, owner string, ttl time.Duration) error {
	if owner == "" || len(owner) > maxLeaseOwner || !utf8.ValidString(owner) {
		return fmt.Errorf("run %s: %w: lease owner must be 1 to %d bytes of UTF-8", runID, ErrInvalidInput, maxLeaseOwner)
	}
	if ttl <= 0 {
		return fmt.Errorf("run %s: %w: lease ttl %s must be positive", runID, ErrInvalidInput, ttl)
	}
	return nil
}

// grantLease decides an AcquireLease. durable is true for a new grant
// (a new epoch): the fencing token must survive a crash, while a renewal
// lost to one only shortens a lease nobody holds any more.
func grantLease(runID string, cur leaseRecord, owner string, now time.Time, ttl time.Duration) (next leaseRecord, durable bool, err error) {
	switch {
	case cur.live(now) && cur.Owner != owner:
		return leaseRecord{}, false, &LeaseHeldError{RunID: runID, Holder: cur.Owner, Expires: cur.Expires}
	case cur.Owner == owner:
		return leaseRecord{Owner: owner, Epoch: cur.Epoch, Expires: now.Add(ttl), Gen: cur.Gen + 1}, false, nil
	default:
		return leaseRecord{Owner: owner, Epoch: cur.Epoch + 1, Expires: now.Add(ttl), Gen: cur.Gen + 1}, true, nil
	}
}

// renewLease decides a RenewLease.
func renewLease(runID string, cur leaseRecord, l Lease, now time.Time, ttl time.Duration) (leaseRecord, error) {
	if err := sameLease(runID, cur, l); err != nil {
		return leaseRecord{}, err
	}
	if !cur.live(now) {
		return leaseRecord{}, fmt.Errorf("run %s: %w: the lease of %q (epoch %d) expired at %s", runID, ErrLeaseLost, l.Owner, l.Epoch, cur.Expires.Format(time.RFC3339Nano))
	}
	return leaseRecord{Owner: cur.Owner, Epoch: cur.Epoch, Expires: now.Add(ttl), Gen: cur.Gen + 1}, nil
}

// releaseLease decides a ReleaseLease: the record keeps its epoch.
func releaseLease(runID string, cur leaseRecord, l Lease) (leaseRecord, error) {
	if err := sameLease(runID, cur, l); err != nil {
		return leaseRecord{}, err
	}
	return leaseRecord{Epoch: cur.Epoch, Gen: cur.Gen + 1}, nil
}

func sameLease(runID string, cur leaseRecord, l Lease) error {
	if l.Owner == "" || cur.Owner != l.Owner || cur.Epoch != l.Epoch {
		holder := "nobody"
		if cur.Owner != "" {
			holder = fmt.Sprintf("%q (epoch %d)", cur.Owner, cur.Epoch)
		}
		return fmt.Errorf("run %s: %w: the lease of %q (epoch %d) is no longer the run's; it is held by %s", runID, ErrLeaseLost, l.Owner, l.Epoch, holder)
	}
	return nil
}

// leaseFormat names the layout of a stored lease record.
const leaseFormat = "stratum.run-lease.v1"

// encodeLease renders a lease record as one checksummed line:
//
//	{"check":C,"epoch":E,"expires":T,"format":F,"gen":G,"owner":O}\n
func encodeLease(r leaseRecord) []byte {
	owner, _ := json.Marshal(r.Owner)
	rest := make([]byte, 0, len(owner)+128)
	rest = append(rest, `"epoch":`...)
	rest = strconv.AppendInt(rest, r.Epoch, 10)
	rest = append(rest, `,"expires":"`...)
	rest = r.Expires.UTC().AppendFormat(rest, time.RFC3339Nano)
	rest = append(rest, `","format":"`+leaseFormat+`","gen":`...)
	rest = strconv.AppendInt(rest, r.Gen, 10)
	rest = append(rest, `,"owner":`...)
	rest = append(rest, owner...)
	rest = append(rest, "}\n"...)
	return withCheck(rest)
}

// decodeLease checks and parses one lease line.
func decodeLease(data []byte) (leaseRecord, error) {
	if _, err := verifyCheck(data, "lease record"); err != nil {
		return leaseRecord{}, err
	}
	var w struct {
		Epoch   int64  `json:"epoch"`
		Expires string `json:"expires"`
		Format  string `json:"format"`
		Gen     int64  `json:"gen"`
		Owner   string `json:"owner"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return leaseRecord{}, fmt.Errorf("bad lease record: %v", err)
	}
	if w.Format != leaseFormat {
		return leaseRecord{}, fmt.Errorf("lease record format %q, want %q", w.Format, leaseFormat)
	}
	exp, err := time.Parse(time.RFC3339Nano, w.Expires)
	if err != nil {
		return leaseRecord{}, fmt.Errorf("bad lease expiry: %v", err)
	}
	return leaseRecord{Owner: w.Owner, Epoch: w.Epoch, Expires: exp.UTC(), Gen: w.Gen}, nil
}

// newestLease picks the valid slot with the higher gen; empty slots are
// absent.
func newestLease(slots [2][]byte) (leaseRecord, bool, error) {
	var best leaseRecord
	found, bad := false, 0
	for _, b := range slots {
		if len(b) == 0 || b[0] == 0 {
			continue
		}
		r, err := decodeLease(b)
		if err != nil {
			bad++
			continue
		}
		if !found || r.Gen > best.Gen {
			best, found = r, true
		}
	}
	if !found && bad > 0 {
		return leaseRecord{}, false, errors.New("the lease file holds no valid record")
	}
	return best, found, nil
}
