package store

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"time"
)

// Every line read is checked completely (docs/storage.md, "Reading"): it
// must be exactly the canonical line its fields encode to, and its hash
// the SHA-256 of its body. [decodeEventRebuilt] checks that by rebuilding
// the line and comparing; [checkLineFast] checks the same without
// rebuilding anything, in one pass over the line and without allocating,
// and says "not sure" for anything unusual, which then takes the rebuild
// (and gets its error text). TestCheckLineEveryByte and FuzzCheckLineFast
// hold the two to the same answer (docs/storage.md, "Reading").

// lineParts is an event line checked by [checkLineFast]: its fields, the
// byte slices aliasing the line.
type lineParts struct {
	seq      int64
	at       time.Time
	begin    bool
	typ      []byte
	data     []byte
	hash     []byte // 64 lowercase hex digits
	prevHash []byte // 64 lowercase hex digits
}

// checkLineFast reports whether line is an event line in canonical form
// whose hash is right, taking it apart. False means "not sure": the line
// may still be good (data the canonical scan is unsure of, see
// [isCanonical]); only [decodeEventRebuilt] decides. h hashes the body.
//
// With the layout of splitLayout matched, the line equals the line its
// fields rebuild to exactly when the time is in its one stored form, the
// seq digits are canonical, data is canonical, the hashes are lowercase
// hex and the type is valid: the rest of the rebuilt line is the layout's
// fixed text.
func checkLineFast(line []byte, h *bodyHasher) (p lineParts, ok bool) {
	l, ok := splitLayout(line)
	if !ok {
		return p, false
	}
	seq, ok := canonicalSeq(l.seq)
	if !ok || !validEventTypeBytes(l.typ) || !isHashHexBytes(l.hash) || !isHashHexBytes(l.prevHash) {
		return p, false
	}
	at, ok := parseStoredAt(l.at)
	if !ok || !isCanonical(l.data) {
		return p, false
	}
	var stored [sha256.Size]byte
	if _, err := hex.Decode(stored[:], l.hash); err != nil || stored != h.sum(line, l.hashAt) {
		return p, false
	}
	return lineParts{seq: seq, at: at, begin: l.begin, typ: l.typ, data: l.data, hash: l.hash, prevHash: l.prevHash}, true
}

// bodyHasher hashes the bodies of event lines (the line without its hash
// member) without allocating for each: a body that fits is copied into
// small and summed, a longer one streamed through a digest made once.
// The zero value is ready; on the stack it costs no allocation until a
// body does not fit.
type bodyHasher struct {
	small  [1 << 10]byte
	digest hash.Hash
	out    []byte // the digest's Sum buffer
}

// sum returns the SHA-256 of line without line[hashAt:hashAt+hashMemberLen].
func (h *bodyHasher) sum(line []byte, hashAt int) (sum [sha256.Size]byte) {
	head, tail := line[:hashAt], line[hashAt+hashMemberLen:]
	if len(head)+len(tail) <= len(h.small) {
		n := copy(h.small[:], head)
		n += copy(h.small[n:], tail)
		return sha256.Sum256(h.small[:n])
	}
	if h.digest == nil {
		h.digest = sha256.New()
	}
	h.digest.Reset()
	h.digest.Write(head)
	h.digest.Write(tail)
	h.out = h.digest.Sum(h.out[:0])
	copy(sum[:], h.out)
	return sum
}

// canonicalSeq reads a seq spelled as strconv.AppendInt spells it: digits
// without a sign or a leading zero (except "0" itself), within int64.
func canonicalSeq(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 19 || len(b) > 1 && b[0] == '0' {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0') // 19 digits cannot overflow uint64
	}
	if n > 1<<63-1 {
		return 0, false
	}
	return int64(n), true
}

// maxStoredAtLen is the length of the longest stored time,
// 2006-01-02T15:04:05.999999999Z.
const maxStoredAtLen = len("2006-01-02T15:04:05.999999999Z")

// parseStoredAt reads a time in its one stored form ([formatAt]): it
// parses YYYY-MM-DDTHH:MM:SS[.F]Z by position and accepts the result only
// if formatting it gives back exactly b. So whatever it accepts,
// time.Parse(time.RFC3339Nano) reads as the same time and formatAt
// rebuilds byte for byte.
func parseStoredAt(b []byte) (time.Time, bool) {
	if len(b) < len("2006-01-02T15:04:05Z") || len(b) > maxStoredAtLen {
		return time.Time{}, false
	}
	num := func(i, n int) (int, bool) {
		v := 0
		for _, c := range b[i : i+n] {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		return v, true
	}
	year, ok1 := num(0, 4)
	month, ok2 := num(5, 2)
	day, ok3 := num(8, 2)
	hour, ok4 := num(11, 2)
	minute, ok5 := num(14, 2)
	sec, ok6 := num(17, 2)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
		return time.Time{}, false
	}
	nsec := 0
	if frac := b[19 : len(b)-1]; len(frac) > 0 {
		if frac[0] != '.' || len(frac) == 1 {
			return time.Time{}, false
		}
		digits := len(frac) - 1
		v, ok := num(20, digits)
		if !ok {
			return time.Time{}, false
		}
		for range 9 - digits {
			v *= 10
		}
		nsec = v
	}
	// The separators and any out-of-range field (time.Date normalizes
	// them) are caught by the comparison.
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC)
	var buf [maxStoredAtLen + 8]byte
	if string(t.AppendFormat(buf[:0], time.RFC3339Nano)) != string(b) {
		return time.Time{}, false
	}
	return t, true
}

// validEventTypeBytes is [validEventType] of bytes.
func validEventTypeBytes(t []byte) bool {
	if len(t) == 0 || len(t) > maxEventTypeLen {
		return false
	}
	for _, c := range t {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == ':' || c == '-' {
			continue
		}
		return false
	}
	return true
}

// isHashHexBytes is [isHashHex] of bytes, by table: the digits of a hash
// are random, and a test of ranges mispredicts on every other one.
func isHashHexBytes(s []byte) bool {
	if len(s) != hashHexLen {
		return false
	}
	var bad byte
	for _, c := range s {
		bad |= notLowerHex[c]
	}
	return bad == 0
}

// notLowerHex is 1 for every byte but 0-9 and a-f.
var notLowerHex = func() (t [256]byte) {
	for c := range t {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			t[c] = 1
		}
	}
	return t
}()
