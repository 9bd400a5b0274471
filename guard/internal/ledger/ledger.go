package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/stratum-go/stratum/guard/internal/canon"
	"github.com/stratum-go/stratum/internal/atomicfile"
)

// Outcomes and kinds written to the ledger.
const (
	OutcomeApplied      = "applied"
	OutcomeRefused      = "refused"
	OutcomeDeviation    = "deviation"
	OutcomeGraphVersion = "graph_version"
	// OutcomeReviewClean is never written by the guard but counts as a
	// clean receipt when another writer recorded it.
	OutcomeReviewClean = "review_clean"

	KindTransition   = "transition"
	KindDeviation    = "deviation"
	KindGraphVersion = "graph_version"
)

// FileMode is the mode of a ledger and of the torn tails kept beside it:
// readable by its owner only.
const FileMode = 0o600

// CurrentPayloadDigestVersion is written on every new entry.
const CurrentPayloadDigestVersion = 2

// ErrCorrupt reports damage that is not a torn tail: an invalid line
// followed by more entries, or a complete (newline-terminated) last line
// that does not continue the chain, i.e. tampering.
var ErrCorrupt = errors.New("ledger corrupt")

// Entry is one ledger line. Nullable fields are pointers; Verdict is the
// decoded JSON object (or nil).
type Entry struct {
	EntryDigest          string  `json:"entry_digest" jsonschema:"this entry's digest (sha256 of the entry and prev_digest): the receipt a ledger_ref names"`
	PrevDigest           string  `json:"prev_digest" jsonschema:"the previous entry's digest (the hash chain)"`
	TsMs                 int64   `json:"ts_ms" jsonschema:"when the attempt was recorded, in Unix milliseconds"`
	FromState            string  `json:"from_state" jsonschema:"the state the move started from"`
	ToState              string  `json:"to_state" jsonschema:"the state the move asked for"`
	Outcome              string  `json:"outcome" jsonschema:"applied, refused, deviation (a signed override) or graph_version (a policy change)"`
	Kind                 string  `json:"kind" jsonschema:"transition, deviation or graph_version"`
	ResolvedBy           string  `json:"resolved_by" jsonschema:"who asked for the move (agent, human, system or a name)"`
	IdempotencyKey       *string `json:"idempotency_key" jsonschema:"the idempotency_key the move was requested with, or null"`
	PayloadDigest        *string `json:"payload_digest" jsonschema:"digest of the request's evidence (for a policy change: the new policy checksum), or null"`
	PayloadDigestVersion int     `json:"payload_digest_version" jsonschema:"how payload_digest was computed (0 for legacy entries)"`
	Rationale            *string `json:"rationale" jsonschema:"the reason given (overrides and policy changes), or null"`
	// Verdict is the verdict object, or nil. Entries read from disk keep it
	// as raw text in VerdictJSON until DecodeVerdict is called: most
	// operations never look at old verdicts.
	Verdict     any             `json:"verdict" jsonschema:"the predicates' verdict object (which held, which failed and why), or null"`
	VerdictJSON json.RawMessage `json:"-"`
}

// Core is the map an entry digest is taken over: every field except
// entry_digest. A zero PayloadDigestVersion (legacy) is omitted.
func (e *Entry) Core() map[string]any {
	m := map[string]any{
		"ts_ms":           e.TsMs,
		"from_state":      e.FromState,
		"to_state":        e.ToState,
		"outcome":         e.Outcome,
		"kind":            e.Kind,
		"resolved_by":     e.ResolvedBy,
		"idempotency_key": e.IdempotencyKey,
		"payload_digest":  e.PayloadDigest,
		"rationale":       e.Rationale,
		"verdict":         e.Verdict,
		"prev_digest":     e.PrevDigest,
	}
	if e.PayloadDigestVersion != 0 {
		m["payload_digest_version"] = e.PayloadDigestVersion
	}
	return m
}

// Digest returns sha256_hex(canonical(core) + prev).
func Digest(core map[string]any, prev string) (string, error) {
	b, err := canon.Marshal(core)
	if err != nil {
		return "", fmt.Errorf("ledger entry: %w", err)
	}
	return digestText(b, prev), nil
}

func digestText(core []byte, prev string) string {
	h := sha256.New()
	h.Write(core)
	h.Write([]byte(prev))
	return hex.EncodeToString(h.Sum(nil))
}

// Seal links e after prev: it sets PrevDigest and EntryDigest and returns
// the line to append (without its newline).
func Seal(e *Entry, prev string) ([]byte, error) {
	e.PrevDigest = prev
	core := e.Core()
	d, err := Digest(core, prev)
	if err != nil {
		return nil, err
	}
	e.EntryDigest = d
	core["entry_digest"] = d
	line, err := canon.Marshal(core)
	if err != nil {
		return nil, fmt.Errorf("ledger entry: %w", err)
	}
	return line, nil
}

// Log is a parsed ledger.
type Log struct {
	Entries []Entry
	// Head is the digest of the last valid entry, "" when there is none.
	Head string
	// ValidEnd is the byte offset just past the last valid line and its
	// line terminator (0 for none).
	ValidEnd int64
	// Size is the length of the file as read.
	Size int64
	// Torn is set when an invalid, incomplete (unterminated) last line was
	// dropped; TornLine is its 1-based line number and TornReason why it
	// was invalid.
	Torn       bool
	TornLine   int
	TornReason string
	// Unterminated is set when the last valid line has no line terminator,
	// so that an append must first end it.
	Unterminated bool
}

// CurrentState is the to_state of the last applied or deviation entry, or
// initial when there is none.
func (l *Log) CurrentState(initial string) string {
	for i := len(l.Entries) - 1; i >= 0; i-- {
		if o := l.Entries[i].Outcome; o == OutcomeApplied || o == OutcomeDeviation {
			return l.Entries[i].ToState
		}
	}
	return initial
}

// ByIdempotencyKey returns the newest entry carrying key (non-empty).
func (l *Log) ByIdempotencyKey(key string) (*Entry, bool) {
	if key == "" {
		return nil, false
	}
	for i := len(l.Entries) - 1; i >= 0; i-- {
		if k := l.Entries[i].IdempotencyKey; k != nil && *k == key {
			return &l.Entries[i], true
		}
	}
	return nil, false
}

// HasCleanReceipt reports whether an entry with exactly this digest was
// applied (or recorded as review_clean).
func (l *Log) HasCleanReceipt(digest string) bool {
	for i := range l.Entries {
		e := &l.Entries[i]
		if e.EntryDigest == digest && (e.Outcome == OutcomeApplied || e.Outcome == OutcomeReviewClean) {
			return true
		}
	}
	return false
}

type line struct {
	text      []byte
	number    int   // 1-based, counting every physical line
	end       int64 // offset just past the line's terminator
	hasTermin bool
}

// splitLines splits on CRLF, CR or LF and drops blank (whitespace-only)
// lines.
func splitLines(data []byte) []line {
	var out []line
	n := 0
	for start := 0; start < len(data); {
		i := bytes.IndexAny(data[start:], "\r\n")
		var text []byte
		end := len(data)
		term := false
		if i < 0 {
			text = data[start:]
		} else {
			text = data[start : start+i]
			end = start + i + 1
			if data[start+i] == '\r' && end < len(data) && data[end] == '\n' {
				end++
			}
			term = true
		}
		n++
		if len(bytes.TrimSpace(text)) > 0 {
			out = append(out, line{text: text, number: n, end: int64(end), hasTermin: term})
		}
		start = end
	}
	return out
}

var digestPrefix = []byte(`{"entry_digest":"`)

// prefixLen is len(`{"entry_digest":"` + 64 hex + `",`).
var prefixLen = len(digestPrefix) + 64 + 2

func isLowerHex(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// verifyLine checks one line against the running previous digest by text
// excision and decodes it.
func verifyLine(text []byte, prev string) (Entry, error) {
	if len(text) < prefixLen || !bytes.HasPrefix(text, digestPrefix) ||
		!isLowerHex(text[len(digestPrefix):len(digestPrefix)+64]) ||
		string(text[len(digestPrefix)+64:prefixLen]) != `",` {
		return Entry{}, errors.New(`line does not start with {"entry_digest":"<64 hex>",`)
	}
	stored := string(text[len(digestPrefix) : len(digestPrefix)+64])
	core := make([]byte, 0, len(text)-prefixLen+1)
	core = append(append(core, '{'), text[prefixLen:]...)
	if bytes.HasPrefix(core, []byte(`{"entry_digest"`)) {
		return Entry{}, errors.New("duplicate entry_digest key")
	}
	e, err := decodeEntry(text)
	if err != nil {
		return Entry{}, err
	}
	e.EntryDigest = stored
	if want := digestText(core, prev); want != stored {
		return Entry{}, fmt.Errorf("entry_digest %s does not match its content (want %s)", short(stored), short(want))
	}
	if e.PrevDigest != prev {
		return Entry{}, fmt.Errorf("prev_digest %q does not link to the previous entry %q", short(e.PrevDigest), short(prev))
	}
	return e, nil
}

func short(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

// rawEntry is one line decoded in a single pass; values are kept raw
// and read with their required types afterwards.
type rawEntry struct {
	TsMs                 json.RawMessage `json:"ts_ms"`
	FromState            json.RawMessage `json:"from_state"`
	ToState              json.RawMessage `json:"to_state"`
	Outcome              json.RawMessage `json:"outcome"`
	Kind                 json.RawMessage `json:"kind"`
	ResolvedBy           json.RawMessage `json:"resolved_by"`
	IdempotencyKey       json.RawMessage `json:"idempotency_key"`
	PayloadDigest        json.RawMessage `json:"payload_digest"`
	PayloadDigestVersion json.RawMessage `json:"payload_digest_version"`
	Rationale            json.RawMessage `json:"rationale"`
	Verdict              json.RawMessage `json:"verdict"`
	PrevDigest           json.RawMessage `json:"prev_digest"`
}

func isNull(v json.RawMessage) bool { return v == nil || string(v) == "null" }

// decodeEntry reads the fields with their required types: ts_ms, states,
// outcome and kind are required; the rest default as docs/guard.md,
// "Ledger entries" says.
// The verdict is kept as raw JSON (VerdictJSON) until someone needs it.
func decodeEntry(text []byte) (Entry, error) {
	var raw rawEntry
	if err := json.Unmarshal(text, &raw); err != nil {
		return Entry{}, fmt.Errorf("not a JSON object: %v", err)
	}
	var e Entry
	str := func(key string, v json.RawMessage, dst *string, required bool, def string) error {
		if isNull(v) {
			if required {
				return fmt.Errorf("missing %s", key)
			}
			*dst = def
			return nil
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return fmt.Errorf("%s is not a string", key)
		}
		return nil
	}
	nullableStr := func(key string, v json.RawMessage) (*string, error) {
		if isNull(v) {
			return nil, nil
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, fmt.Errorf("%s is not a string or null", key)
		}
		return &s, nil
	}
	var f float64
	if isNull(raw.TsMs) || json.Unmarshal(raw.TsMs, &f) != nil || f != math.Trunc(f) || math.Abs(f) > canon.MaxSafeInteger {
		return Entry{}, errors.New("ts_ms is missing or not an integer")
	}
	e.TsMs = int64(f)
	for _, s := range []struct {
		key      string
		v        json.RawMessage
		dst      *string
		required bool
		def      string
	}{
		{"from_state", raw.FromState, &e.FromState, true, ""},
		{"to_state", raw.ToState, &e.ToState, true, ""},
		{"outcome", raw.Outcome, &e.Outcome, true, ""},
		{"kind", raw.Kind, &e.Kind, true, ""},
		{"resolved_by", raw.ResolvedBy, &e.ResolvedBy, false, "agent"},
		{"prev_digest", raw.PrevDigest, &e.PrevDigest, false, ""},
	} {
		if err := str(s.key, s.v, s.dst, s.required, s.def); err != nil {
			return Entry{}, err
		}
	}
	var err error
	if e.IdempotencyKey, err = nullableStr("idempotency_key", raw.IdempotencyKey); err != nil {
		return Entry{}, err
	}
	if e.PayloadDigest, err = nullableStr("payload_digest", raw.PayloadDigest); err != nil {
		return Entry{}, err
	}
	if e.Rationale, err = nullableStr("rationale", raw.Rationale); err != nil {
		return Entry{}, err
	}
	e.PayloadDigestVersion = 1
	if raw.PayloadDigestVersion != nil {
		switch string(raw.PayloadDigestVersion) {
		case "1":
		case "2":
			e.PayloadDigestVersion = 2
		default:
			return Entry{}, fmt.Errorf("payload_digest_version %s is not 1 or 2", raw.PayloadDigestVersion)
		}
	}
	if !isNull(raw.Verdict) {
		if raw.Verdict[0] != '{' {
			return Entry{}, errors.New("verdict is not an object or null")
		}
		e.VerdictJSON = raw.Verdict
	}
	return e, nil
}

// DecodeVerdict fills Verdict from the raw text read from disk (a no-op for
// entries built in memory or already decoded).
func (e *Entry) DecodeVerdict() error {
	if e.Verdict != nil || e.VerdictJSON == nil {
		return nil
	}
	if err := json.Unmarshal(e.VerdictJSON, &e.Verdict); err != nil {
		return fmt.Errorf("ledger entry %s: verdict: %w", short(e.EntryDigest), err)
	}
	return nil
}

// Parse reads a ledger the way every operation does: valid lines form the
// chain, an invalid last line without its newline is dropped as a torn
// write (Log.Torn), and any other invalid line — one before the last, or a
// complete last line — is ErrCorrupt.
func Parse(data []byte) (*Log, error) {
	return parse(data, false)
}

// ParseStrict is Parse without tolerance: an invalid last line is an error
// too. It is what `stratum guard verify` uses.
func ParseStrict(data []byte) (*Log, error) {
	return parse(data, true)
}

func parse(data []byte, strict bool) (*Log, error) {
	lines := splitLines(data)
	l := &Log{Size: int64(len(data)), Entries: make([]Entry, 0, len(lines))}
	for i, ln := range lines {
		e, err := verifyLine(ln.text, l.Head)
		if err != nil {
			last := i == len(lines)-1
			switch {
			case last && !ln.hasTermin && !strict:
				// Only an append cut short leaves a line without its
				// newline: that is a torn write.
				l.Torn, l.TornLine, l.TornReason = true, ln.number, err.Error()
				return l, nil
			case last && ln.hasTermin:
				// A whole line with its newline was written by someone:
				// an append is one write of line and newline, so a crash
				// cannot leave this behind.
				return nil, fmt.Errorf("%w: line %d, a complete last line, does not continue the chain (not a torn write): %v", ErrCorrupt, ln.number, err)
			case last:
				return nil, fmt.Errorf("%w: line %d, an incomplete last line: %v", ErrCorrupt, ln.number, err)
			}
			return nil, fmt.Errorf("%w: line %d: %v", ErrCorrupt, ln.number, err)
		}
		e.PrevDigest = l.Head
		l.Entries = append(l.Entries, e)
		l.Head = e.EntryDigest
		l.ValidEnd = ln.end
		l.Unterminated = !ln.hasTermin
	}
	return l, nil
}

// Read parses the ledger file at path; a missing file is an empty ledger.
func Read(path string) (*Log, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &Log{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	return Parse(data)
}

// Repair makes the file at path safe to append to, given l as just read
// from it under the resource lock: a torn (incomplete) tail is copied to a
// ledger.torn-<ns> file beside the ledger (evidence is kept, not
// destroyed) and truncated away, as is any blank text after the last valid
// line (a line appended after it would start with that whitespace, fail
// verification and be dropped as torn itself), and an unterminated last
// line is ended. It is a no-op for a clean ledger.
func Repair(path string, l *Log, now time.Time) error {
	if l.ValidEnd < l.Size {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("repair ledger: %w", err)
		}
		defer f.Close()
		if l.Torn {
			tail := make([]byte, l.Size-l.ValidEnd)
			if _, err := f.ReadAt(tail, l.ValidEnd); err != nil {
				return fmt.Errorf("repair ledger: read torn tail: %w", err)
			}
			keep := filepath.Join(filepath.Dir(path), "ledger.torn-"+strconv.FormatInt(now.UnixNano(), 10))
			if err := atomicfile.WriteFile(keep, tail, FileMode); err != nil {
				return fmt.Errorf("repair ledger: keep torn tail: %w", err)
			}
		}
		if err := f.Truncate(l.ValidEnd); err != nil {
			return fmt.Errorf("repair ledger: truncate torn tail: %w", err)
		}
		if err := f.Sync(); err != nil {
			return fmt.Errorf("repair ledger: fsync: %w", err)
		}
		l.Torn, l.Size = false, l.ValidEnd
	}
	if l.Unterminated && l.ValidEnd == l.Size {
		// An empty appended line ends the last one; blank lines are skipped
		// by readers.
		if err := atomicfile.AppendLine(path, nil, FileMode); err != nil {
			return fmt.Errorf("repair ledger: %w", err)
		}
		l.Unterminated = false
		l.Size++
		l.ValidEnd = l.Size
	}
	return nil
}

// Append seals e after l's head, appends it to the file at path (which
// Repair must have made safe) and adds it to l.
func Append(path string, l *Log, e *Entry) error {
	line, err := Seal(e, l.Head)
	if err != nil {
		return err
	}
	if err := atomicfile.AppendLine(path, line, FileMode); err != nil {
		return fmt.Errorf("append ledger entry: %w", err)
	}
	l.Entries = append(l.Entries, *e)
	l.Head = e.EntryDigest
	l.Size += int64(len(line) + 1)
	l.ValidEnd = l.Size
	return nil
}
