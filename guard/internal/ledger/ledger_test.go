package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func sp(s string) *string { return &s }

// TestDigestVector is the reference's entry digest vector (computed with
// Python; docs/guard.md, "Checksums and digests").
func TestDigestVector(t *testing.T) {
	core := map[string]any{
		"ts_ms": 1735689600123, "from_state": "draft", "to_state": "review", "outcome": "applied",
		"kind": "transition", "resolved_by": "agent", "idempotency_key": "req-δ", "payload_digest": nil,
		"rationale": "café 😀", "verdict": map[string]any{"met": true, "score": 7}, "prev_digest": "prevhex",
	}
	got, err := Digest(core, "prevhex")
	if err != nil {
		t.Fatal(err)
	}
	if want := "6b21a05321202cc47bfb794ad232eaefe09421584181e2c653a4bf7b5c3e87b3"; got != want {
		t.Fatalf("digest %s, want %s", got, want)
	}
	// The same through Entry.Core (a legacy entry: no digest version).
	e := Entry{TsMs: 1735689600123, FromState: "draft", ToState: "review", Outcome: "applied", Kind: "transition",
		ResolvedBy: "agent", IdempotencyKey: sp("req-δ"), Rationale: sp("café 😀"),
		Verdict: map[string]any{"met": true, "score": 7}, PrevDigest: "prevhex"}
	if got2, _ := Digest(e.Core(), "prevhex"); got2 != got {
		t.Fatalf("Entry.Core digest %s, want %s", got2, got)
	}
}

// TestPythonLedger verifies lines written by the Python engine, whose
// verdicts hold floats such as 0.0 that a re-serialisation would lose.
func TestPythonLedger(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "python-floats.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := ParseStrict(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Entries) != 2 || l.Entries[0].PayloadDigestVersion != 1 || l.CurrentState("draft") != "review" {
		t.Fatalf("parsed %+v", l)
	}
	e := &l.Entries[0]
	if e.Verdict != nil {
		t.Fatal("verdicts are decoded lazily")
	}
	if err := e.DecodeVerdict(); err != nil || e.Verdict.(map[string]any)["score"] != 0.0 || e.Verdict.(map[string]any)["conf"] != 1.5e-7 {
		t.Fatalf("verdict %#v %v", e.Verdict, err)
	}
	if !l.HasCleanReceipt(l.Entries[0].EntryDigest) || l.HasCleanReceipt(l.Entries[1].EntryDigest) {
		t.Fatal("receipts: the applied entry is clean, the refused one is not")
	}
}

func entry(i int) Entry {
	outcomes := []string{OutcomeApplied, OutcomeRefused, OutcomeDeviation, OutcomeGraphVersion}
	e := Entry{
		TsMs: int64(1700000000000 + i), FromState: fmt.Sprintf("s%d", i), ToState: fmt.Sprintf("s%d", i+1),
		Outcome: outcomes[i%4], Kind: KindTransition, ResolvedBy: "agent",
		PayloadDigestVersion: CurrentPayloadDigestVersion, PayloadDigest: sp(strings.Repeat("c", 64)),
		Verdict: map[string]any{"met": i%2 == 0, "summary": "δ 😀 \"quoted\"\n", "n": i},
	}
	if i%3 == 0 {
		e.IdempotencyKey = sp(fmt.Sprintf("key-%d", i%6))
	}
	return e
}

// build writes an n-entry ledger and returns its bytes and line offsets.
func build(t *testing.T, n int) ([]byte, []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	l := &Log{}
	for i := range n {
		e := entry(i)
		if err := Append(path, l, &e); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	return data, lines[:len(lines)-1]
}

func TestAppendAndRead(t *testing.T) {
	data, lines := build(t, 6)
	if len(lines) != 6 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, ln := range lines {
		if !strings.HasPrefix(ln, `{"entry_digest":"`) {
			t.Fatalf("line does not start with the digest: %s", ln)
		}
	}
	l, err := ParseStrict(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Entries) != 6 || l.Torn || l.Unterminated || l.ValidEnd != int64(len(data)) {
		t.Fatalf("log %+v", l)
	}
	if l.Entries[0].PrevDigest != "" || l.Entries[3].PrevDigest != l.Entries[2].EntryDigest || l.Head != l.Entries[5].EntryDigest {
		t.Fatal("chain not linked")
	}
	// current state: last applied/deviation entry (entry 4 is applied).
	if got := l.CurrentState("init"); got != "s5" {
		t.Fatalf("current state %s", got)
	}
	if got := (&Log{}).CurrentState("init"); got != "init" {
		t.Fatalf("empty ledger state %s", got)
	}
	if e, ok := l.ByIdempotencyKey("key-0"); !ok || e.TsMs != 1700000000000 {
		t.Fatalf("idempotency lookup: %+v %v", e, ok)
	}
	if e, ok := l.ByIdempotencyKey("key-3"); !ok || e.TsMs != 1700000000003 {
		t.Fatalf("idempotency lookup (newest first): %+v %v", e, ok)
	}
	if _, ok := l.ByIdempotencyKey(""); ok {
		t.Fatal("empty key matched")
	}
	// CRLF, CR and blank lines are all accepted.
	crlf := strings.ReplaceAll(string(data), "\n", "\r\n\n  \n")
	if l2, err := ParseStrict([]byte(crlf)); err != nil || len(l2.Entries) != 6 {
		t.Fatalf("CRLF ledger: %v", err)
	}
	cr := strings.ReplaceAll(string(data), "\n", "\r")
	if l2, err := ParseStrict([]byte(cr)); err != nil || len(l2.Entries) != 6 {
		t.Fatalf("CR ledger: %v", err)
	}
}

// expectRead checks Parse's verdict on a damaged ledger: interior damage
// must be ErrCorrupt; damage confined to the last line must drop exactly
// that line.
func expectRead(t *testing.T, name string, data []byte, wantEntries int, wantCorrupt bool) *Log {
	t.Helper()
	l, err := Parse(data)
	if wantCorrupt {
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Parse = %v, want ErrCorrupt", name, err)
		}
		if _, err := ParseStrict(data); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: ParseStrict = %v, want ErrCorrupt", name, err)
		}
		return nil
	}
	if err != nil {
		t.Errorf("%s: Parse: %v", name, err)
		return nil
	}
	if len(l.Entries) != wantEntries {
		t.Errorf("%s: %d entries, want %d", name, len(l.Entries), wantEntries)
	}
	return l
}

func TestTamperEdit(t *testing.T) {
	const n = 5
	data, lines := build(t, n)
	for i := range n {
		off := 0
		for _, ln := range lines[:i] {
			off += len(ln)
		}
		// Flip characters at several places of line i: the digest prefix,
		// a state name, the verdict; each must be detected.
		ln := lines[i]
		for _, pos := range []int{2, 20, strings.Index(ln, `"from_state"`) + 15, strings.Index(ln, `"met"`) + 7, len(ln) - 3} {
			mut := bytes.Clone(data)
			c := mut[off+pos]
			switch {
			case c >= 'a' && c < 'z':
				mut[off+pos] = c + 1
			case c == 'z':
				mut[off+pos] = 'a'
			default:
				mut[off+pos] = 'x'
			}
			name := fmt.Sprintf("edit line %d byte %d", i+1, pos)
			// Every edit of a complete line, the last one included, is
			// tampering: only an append cut short leaves an invalid line.
			expectRead(t, name, mut, 0, true)
			if i == n-1 {
				// The same damage without the newline is what a torn
				// append leaves: dropped, and strict verification fails.
				cut := bytes.TrimSuffix(mut, []byte("\n"))
				l := expectRead(t, name+" (no newline)", cut, n-1, false)
				if l != nil && !l.Torn {
					t.Errorf("%s: unterminated last line not reported torn", name)
				}
				if _, err := ParseStrict(cut); !errors.Is(err, ErrCorrupt) {
					t.Errorf("%s: strict verification passed", name)
				}
			}
		}
	}
	// An edit that re-computes the line's own digest still breaks the link
	// of the next line.
	l, _ := Parse(data)
	forged := l.Entries[1]
	forged.ToState = "forged"
	line, err := Seal(&forged, l.Entries[0].EntryDigest)
	if err != nil {
		t.Fatal(err)
	}
	mut := lines[0] + string(line) + "\n" + strings.Join(lines[2:], "")
	expectRead(t, "re-sealed interior edit", []byte(mut), 0, true)
}

func TestTamperDeleteReorder(t *testing.T) {
	const n = 5
	_, lines := build(t, n)
	join := func(ls []string) []byte { return []byte(strings.Join(ls, "")) }
	for i := range n {
		rest := append(append([]string{}, lines[:i]...), lines[i+1:]...)
		name := fmt.Sprintf("delete line %d", i+1)
		switch {
		case i == n-1:
			// Removing whole last lines leaves a valid shorter chain: the
			// ledger is tamper-evident, not append-proof (docs/guard.md).
			expectRead(t, name, join(rest), n-1, false)
		case i == n-2:
			// The new last line is complete and no longer links: tampering,
			// not a torn write.
			expectRead(t, name, join(rest), 0, true)
		default:
			expectRead(t, name, join(rest), 0, true)
		}
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			sw := append([]string{}, lines...)
			sw[i], sw[j] = sw[j], sw[i]
			// Even swapping the last two: the old last line is now interior
			// and does not link.
			expectRead(t, fmt.Sprintf("swap lines %d and %d", i+1, j+1), join(sw), 0, true)
		}
	}
	// Duplicating a line is a broken link too.
	dup := append(append([]string{}, lines[:3]...), lines[2:]...)
	expectRead(t, "duplicate line 3", join(dup), 0, true)
	// Garbage before the end.
	withJunk := append(append([]string{}, lines[:2]...), append([]string{"not json\n"}, lines[2:]...)...)
	expectRead(t, "junk line", join(withJunk), 0, true)
}

// TestTruncateEveryPosition cuts the ledger at every byte: the complete
// lines must survive, the partial one must be dropped, and after Repair a
// new append must leave a strictly valid chain.
func TestTruncateEveryPosition(t *testing.T) {
	const n = 3
	data, lines := build(t, n)
	ends := make([]int, n) // offset just past each line's closing brace
	off := 0
	for i, ln := range lines {
		off += len(ln)
		ends[i] = off - 1
	}
	dir := t.TempDir()
	now := time.Unix(1700000000, 0)
	for k := 0; k <= len(data); k++ {
		complete := 0
		for _, e := range ends {
			if e <= k {
				complete++
			}
		}
		cut := data[:k]
		name := fmt.Sprintf("truncate at %d", k)
		l := expectRead(t, name, cut, complete, false)
		if l == nil {
			continue
		}
		tail := cut[l.ValidEnd:]
		partial := len(bytes.TrimSpace(tail)) > 0
		if l.Torn != partial {
			t.Fatalf("%s: torn=%v, want %v", name, l.Torn, partial)
		}
		// Repairing writes and fsyncs: do it at every line boundary (±2
		// bytes) and every 31st byte in between; Parse ran at every byte.
		nearBoundary := false
		for _, e := range ends {
			nearBoundary = nearBoundary || (k >= e-2 && k <= e+2)
		}
		if k%31 != 0 && !nearBoundary && k != len(data) {
			continue
		}
		path := filepath.Join(dir, fmt.Sprintf("l%d.jsonl", k))
		if err := os.WriteFile(path, cut, 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := Read(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := Repair(path, l, now.Add(time.Duration(k))); err != nil {
			t.Fatal(err)
		}
		e := entry(100)
		if err := Append(path, l, &e); err != nil {
			t.Fatal(err)
		}
		after, _ := os.ReadFile(path)
		strict, err := ParseStrict(after)
		if err != nil {
			t.Fatalf("%s: after repair and append: %v\n%q", name, err, after)
		}
		if len(strict.Entries) != complete+1 || strict.Head != e.EntryDigest {
			t.Fatalf("%s: %d entries after append, want %d", name, len(strict.Entries), complete+1)
		}
		if partial {
			kept, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("ledger.torn-%d", now.Add(time.Duration(k)).UnixNano())))
			if err != nil || !bytes.Equal(kept, tail) {
				t.Fatalf("%s: torn tail not kept: %v", name, err)
			}
		}
	}
}

// TestRepairTails: whatever follows the last valid line — blank text, or
// an incomplete invalid line (a torn append), possibly followed by blank
// text — is gone before the next append, so the appended entry verifies;
// only a non-blank tail is kept aside. A complete invalid last line is not
// a tail to repair: Read refuses it (ErrCorrupt).
func TestRepairTails(t *testing.T) {
	data, lines := build(t, 3)
	forged := strings.Replace(lines[2], `"s2"`, `"s9"`, 1)
	torn := strings.TrimSuffix(forged, "\n")
	for _, c := range []struct {
		name, text string
		kept       bool
	}{
		{"blank tail", string(data) + "  \n \t", false},
		{"blank lines", string(data) + "\n\r\n", false},
		{"incomplete last line", strings.Join(lines[:2], "") + torn, true},
		{"half a line", strings.Join(lines[:2], "") + torn[:len(torn)/2], true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "ledger.jsonl")
			if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
				t.Fatal(err)
			}
			l, err := Read(path)
			if err != nil {
				t.Fatal(err)
			}
			valid := len(l.Entries)
			if err := Repair(path, l, time.Unix(0, 42)); err != nil {
				t.Fatal(err)
			}
			e := entry(100)
			if err := Append(path, l, &e); err != nil {
				t.Fatal(err)
			}
			after, _ := os.ReadFile(path)
			strict, err := ParseStrict(after)
			if err != nil || len(strict.Entries) != valid+1 || strict.Head != e.EntryDigest {
				t.Fatalf("after repair and append: %v\n%q", err, after)
			}
			kept, err := os.ReadFile(filepath.Join(dir, "ledger.torn-42"))
			if c.kept != (err == nil) || (c.kept && !strings.HasPrefix(torn, string(kept))) {
				t.Fatalf("kept %q, %v; want kept=%v", kept, err, c.kept)
			}
		})
	}
}

func TestCompleteInvalidLastLineIsCorrupt(t *testing.T) {
	data, lines := build(t, 3)
	forged := strings.Replace(lines[2], `"s2"`, `"s9"`, 1)
	for name, text := range map[string]string{
		"edited last line":         strings.Join(lines[:2], "") + forged,
		"edited last line, blanks": strings.Join(lines[:2], "") + forged + "\n \n",
		"garbage line appended":    string(data) + "garbage\n",
		"garbage line, CRLF":       string(data) + "garbage\r\n",
		"duplicate last line":      string(data) + lines[2],
	} {
		path := filepath.Join(t.TempDir(), "ledger.jsonl")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(path); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "complete last line") {
			t.Errorf("%s: Read = %v, want ErrCorrupt naming the complete last line", name, err)
		}
	}
}

func TestRepairNoop(t *testing.T) {
	data, _ := build(t, 2)
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	os.WriteFile(path, data, 0o644)
	l, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := Repair(path, l, time.Now()); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(after, data) {
		t.Fatal("repair changed a clean ledger")
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatal("repair left files behind for a clean ledger")
	}
	if l, err := Read(filepath.Join(t.TempDir(), "missing")); err != nil || len(l.Entries) != 0 {
		t.Fatalf("missing ledger: %v", err)
	}
}

func TestDecodeEntryTypes(t *testing.T) {
	// Lines that are valid JSON and correctly chained but have bad field
	// types must be refused: build each by sealing a raw core.
	bad := []map[string]any{
		{"ts_ms": "1", "from_state": "a", "to_state": "b", "outcome": "applied", "kind": "transition", "prev_digest": ""},
		{"ts_ms": 1, "to_state": "b", "outcome": "applied", "kind": "transition", "prev_digest": ""},
		{"ts_ms": 1, "from_state": 3, "to_state": "b", "outcome": "applied", "kind": "transition", "prev_digest": ""},
		{"ts_ms": 1, "from_state": "a", "to_state": "b", "outcome": "applied", "kind": "transition", "prev_digest": "", "payload_digest_version": 3},
		{"ts_ms": 1, "from_state": "a", "to_state": "b", "outcome": "applied", "kind": "transition", "prev_digest": "", "idempotency_key": 5},
		{"ts_ms": 1, "from_state": "a", "to_state": "b", "outcome": "applied", "kind": "transition", "prev_digest": "", "resolved_by": true},
	}
	for i, core := range bad {
		d, err := Digest(core, "")
		if err != nil {
			t.Fatal(err)
		}
		core["entry_digest"] = d
		line, _ := canonLine(core)
		if _, err := ParseStrict(line); !errors.Is(err, ErrCorrupt) {
			t.Errorf("case %d: %v, want ErrCorrupt", i, err)
		}
	}
	// Minimal valid legacy line: defaults fill in.
	core := map[string]any{"ts_ms": 1, "from_state": "a", "to_state": "b", "outcome": "applied", "kind": "transition"}
	d, _ := Digest(core, "")
	core["entry_digest"] = d
	line, _ := canonLine(core)
	l, err := ParseStrict(line)
	if err != nil {
		t.Fatal(err)
	}
	if e := l.Entries[0]; e.ResolvedBy != "agent" || e.PayloadDigestVersion != 1 || e.IdempotencyKey != nil || e.Verdict != nil {
		t.Fatalf("defaults: %+v", e)
	}
}

func FuzzParse(f *testing.F) {
	seed, _ := os.ReadFile(filepath.Join("testdata", "python-floats.jsonl"))
	f.Add(seed)
	f.Add(seed[:len(seed)/2])
	f.Add([]byte("\n\r\n{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := Parse(data)
		strict, serr := ParseStrict(data)
		if serr == nil {
			if err != nil || l.Torn || len(l.Entries) != len(strict.Entries) {
				t.Fatalf("strict accepted what the tolerant reader rejected or trimmed: %v", err)
			}
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
			return
		}
		prev := ""
		for _, e := range l.Entries {
			if e.PrevDigest != prev {
				t.Fatal("chain not linked")
			}
			prev = e.EntryDigest
		}
		if l.Head != prev || l.ValidEnd > l.Size {
			t.Fatal("head or offsets inconsistent")
		}
	})
}

// verdictLike is the size and shape of a real guard verdict.
func verdictLike(i int) map[string]any {
	pred := map[string]any{"id": "plan", "type": "deterministic", "statement": "server_file_exists('plan.md')", "verdict": "met",
		"confidence": 10, "applied_gate": 0, "evidence": []any{}, "tier_history": []any{}, "t3": nil}
	return map[string]any{
		"clean": true, "met": true, "summary": "guard transition verdict", "findings": []any{}, "consensus": []any{},
		"claude_only": []any{}, "codex_only": []any{}, "lenses_run": []any{}, "auto_fixes": []any{}, "asks": []any{},
		"judge_version": "1.0", "stakes": "default", "predicates": []any{pred}, "tier_disagreements": []any{},
		"meta":              map[string]any{"agent_type": "guard", "source": "evidence", "guard_evidence": []any{map[string]any{"id": "plan", "statement": "server_file_exists('plan.md')", "met": true, "evidence": "plan.md exists"}}},
		"budget_consumed":   map[string]any{"dollars": 0, "turns": 0, "wall_clock_s": 0},
		"judge_kernel_meta": map[string]any{"decomposer_mode": "user", "degraded_judged": false, "smartmemory_priors_consulted": i},
	}
}

// BenchmarkParse1000 reads and verifies a 1000-entry ledger of realistic
// entries (what every guard operation does).
// Run: go test ./guard/internal/ledger/ -run '^$' -bench Parse
func BenchmarkParse1000(b *testing.B) {
	var buf bytes.Buffer
	prev := ""
	for i := range 1000 {
		e := entry(i)
		e.Verdict = verdictLike(i)
		line, err := Seal(&e, prev)
		if err != nil {
			b.Fatal(err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
		prev = e.EntryDigest
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		l, err := Parse(data)
		if err != nil || len(l.Entries) != 1000 {
			b.Fatal(err)
		}
	}
}

// TestForeignWriterEntries: what other writers of a shared store may have
// written and the guard itself never does. A review_clean entry is a clean
// receipt; of two entries with one idempotency key the newest is the prior
// entry (docs/guard.md, "Ledger entries").
func TestForeignWriterEntries(t *testing.T) {
	var text []byte
	prev := ""
	for _, e := range []Entry{
		{TsMs: 1, FromState: "a", ToState: "b", Outcome: OutcomeReviewClean, Kind: KindTransition, ResolvedBy: "agent"},
		{TsMs: 2, FromState: "a", ToState: "b", Outcome: OutcomeRefused, Kind: KindTransition, ResolvedBy: "agent", IdempotencyKey: sp("k")},
		{TsMs: 3, FromState: "a", ToState: "b", Outcome: OutcomeApplied, Kind: KindTransition, ResolvedBy: "agent", IdempotencyKey: sp("k")},
	} {
		line, err := Seal(&e, prev)
		if err != nil {
			t.Fatal(err)
		}
		text = append(append(text, line...), '\n')
		prev = e.EntryDigest
	}
	l, err := ParseStrict(text)
	if err != nil {
		t.Fatal(err)
	}
	if !l.HasCleanReceipt(l.Entries[0].EntryDigest) {
		t.Error("a review_clean entry is not a clean receipt")
	}
	if e, ok := l.ByIdempotencyKey("k"); !ok || e.TsMs != 3 {
		t.Errorf("ByIdempotencyKey(k) = %+v, %v; want the newest entry (ts_ms 3)", e, ok)
	}
	if l.CurrentState("a") != "b" {
		t.Errorf("current state %q", l.CurrentState("a"))
	}
}

// TestPrevDigestFieldChecked: an entry whose digest is right for its text
// and the chain, but whose prev_digest field names another entry, does not
// verify: the field is part of the chain, not decoration.
func TestPrevDigestFieldChecked(t *testing.T) {
	first := Entry{TsMs: 1, FromState: "a", ToState: "b", Outcome: OutcomeApplied, Kind: KindTransition, ResolvedBy: "agent"}
	line1, err := Seal(&first, "")
	if err != nil {
		t.Fatal(err)
	}
	second := Entry{TsMs: 2, FromState: "b", ToState: "c", Outcome: OutcomeApplied, Kind: KindTransition, ResolvedBy: "agent"}
	core := second.Core()
	core["prev_digest"] = strings.Repeat("0", 64) // not the first entry's digest
	coreText, err := canonLine(core)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append(coreText, first.EntryDigest...)) // hashed after the true previous digest
	line2 := append([]byte(`{"entry_digest":"`+hex.EncodeToString(sum[:])+`",`), coreText[1:]...)
	data := append(append(append(line1, '\n'), line2...), '\n')
	if _, err := ParseStrict(data); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ParseStrict = %v, want ErrCorrupt", err)
	}
	if _, err := Parse(data); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Parse = %v, want ErrCorrupt", err)
	}
}
