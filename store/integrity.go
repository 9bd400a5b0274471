package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// The rules in this file decide, for every backend alike, what a run's
// parts (state, head record, data after the head) say together: intact,
// interrupted by a crash (and how to finish or repair it), or corrupt.
// docs/storage.md, "Loading and repair", lists every case.

// classifyTail describes bytes found after the acknowledged head. They are
// what one interrupted write can leave (Chained) only if they are events
// continuing the chain from the head, the first beginning a write and no
// later one beginning another, followed by at most one incomplete line.
// A tail with no write marks at all is what a writer of the log format
// before marks left, and is taken as one write.
func classifyTail(data []byte, head Head) Tail {
	t := Tail{Bytes: int64(len(data)), Chained: true}
	seq, prev := head.Seq, head.Hash
	bad := func(format string, args ...any) Tail {
		t.Chained, t.Reason = false, fmt.Sprintf(format, args...)
		return t
	}
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return t // nothing left, or one torn line
		}
		ev, err := decodeEvent(data[:i])
		switch {
		case err != nil:
			return bad("line %d after the head is not an event of this run: %v", t.Events+1, err)
		case ev.Seq != seq+1 || ev.PrevHash != prev:
			return bad("line %d after the head (seq %d) does not continue the chain from the head (seq %d)", t.Events+1, ev.Seq, seq)
		case ev.Begin && t.Events > 0:
			return bad("the data after the head holds more than one write (a second write begins at seq %d): only one interrupted write can leave data there", ev.Seq)
		}
		t.Events++
		seq, prev = ev.Seq, ev.Hash
		data = data[i+1:]
	}
}

// tailTorn reports whether a tail ends inside a line.
func tailTorn(data []byte) bool { return len(data) > 0 && data[len(data)-1] != '\n' }

// keptTail describes tail data as a repair keeps it.
func keptTail(name string, data []byte, t Tail) KeptTail {
	sum := sha256.Sum256(data)
	return KeptTail{Name: name, Bytes: int64(len(data)), SHA256: hex.EncodeToString(sum[:]), Events: t.Events, Torn: tailTorn(data)}
}

// judgeRecord compares a run's head record with its state. It returns one
// of HeadRecordMatch, HeadRecordMissing or HeadRecordBehind, or the
// corruption the two show. Writes put the state before the record, so the
// record may be one write behind after a crash, never ahead.
func judgeRecord(runID string, env envelope, rec headRecord, have bool) (string, *CorruptError) {
	if !have {
		return HeadRecordMissing, nil
	}
	bad := func(part, format string, args ...any) (string, *CorruptError) {
		return "", &CorruptError{RunID: runID, Part: part, Offset: -1, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case rec.RunID != runID:
		return bad(PartHead, "the head record belongs to run %q", rec.RunID)
	case rec.Rev == env.Rev && rec.head() == (Head{Seq: env.Seq, Hash: env.Head}) && rec.State == env.Check:
		return HeadRecordMatch, nil
	case rec.Rev == env.Rev && rec.head() == (Head{Seq: env.Seq, Hash: env.Head}):
		return bad(PartState, "the state is not the one its write left: the head record of write %d names a state with check %s, the state file has %s: it was edited and its check recomputed",
			rec.Rev, rec.State, env.Check)
	case rec.Rev == env.Rev:
		return bad(PartHead, "the head record and the state both claim write %d but name different heads (record: seq %d, hash %s; state: seq %d, hash %s)",
			rec.Rev, rec.Seq, rec.Hash, env.Seq, env.Head)
	case rec.Rev > env.Rev:
		return bad(PartState, "the state is older than the run's head record: the record names write %d (head seq %d, hash %s, written %s) and the state write %d (head seq %d): the state was rolled back or replaced, and acknowledged writes are missing from it",
			rec.Rev, rec.Seq, rec.Hash, rec.SavedAt.Format(time.RFC3339), env.Rev, env.Seq)
	case rec.Rev == env.Rev-1 && rec.Seq <= env.Seq:
		return HeadRecordBehind, nil
	case rec.Rev == env.Rev-1:
		return bad(PartHead, "the head record of write %d names seq %d, beyond the state's head seq %d of the next write", rec.Rev, rec.Seq, env.Seq)
	default:
		return bad(PartHead, "the head record names write %d but the state is at write %d: the record was rolled back", rec.Rev, env.Rev)
	}
}

// removedRun is the corruption of a run whose data is gone while its head
// record remains: a removed run must not look like one that never existed.
func removedRun(runID string, rec headRecord) *CorruptError {
	return &CorruptError{RunID: runID, Part: PartRun, Offset: -1, Reason: fmt.Sprintf(
		"the run's data was removed: its head record names write %d, head seq %d (hash %s), written %s",
		rec.Rev, rec.Seq, rec.Hash, rec.SavedAt.Format(time.RFC3339Nano))}
}

// tailCorrupt is the corruption of data after the head that no
// interrupted write can leave.
func tailCorrupt(runID string, env envelope, t Tail) *CorruptError {
	return &CorruptError{RunID: runID, Part: PartEvents, Seq: env.Seq + 1, Offset: env.LogSize, Reason: fmt.Sprintf(
		"%d bytes after the acknowledged head (seq %d) are not what one interrupted write can leave: %s; nothing is written to the run until a person decides (docs/storage.md, \"Loading and repair\")",
		t.Bytes, env.Seq, t.Reason)}
}

// anchorMissing is Verify's answer when the anchor is not on the chain.
func anchorMissing(runID, anchor string, head Head) *CorruptError {
	return &CorruptError{RunID: runID, Part: PartEvents, Offset: -1, Reason: fmt.Sprintf(
		"the anchor head %s is not on the run's chain (genesis to seq %d, hash %s): the run was rewritten or rolled back to before the anchor",
		anchor, head.Seq, head.Hash)}
}

// anchoredMissing is Verify's answer for a run that does not exist (no
// data, no head record) when the caller holds an anchor for it: someone
// kept a head of this run, so it existed and was removed with its record.
func anchoredMissing(runID, anchor string) *CorruptError {
	return &CorruptError{RunID: runID, Part: PartRun, Offset: -1, Reason: fmt.Sprintf(
		"the run does not exist, but an anchor head (%s) was given for it: it was removed together with its head record", anchor)}
}

// checkAnchor validates VerifyOptions.Head.
func checkAnchor(runID, anchor string) error {
	if anchor != "" && !isHashHex(anchor) {
		return fmt.Errorf("run %s: %w: anchor head %q is not 64 lowercase hex digits", runID, ErrInvalidInput, anchor)
	}
	return nil
}

// verifyChecks says what Verify checked, in words.
func verifyChecks(env envelope, rep *VerifyReport, anchor string) []string {
	checks := []string{
		"state: checksum, layout, run id",
		fmt.Sprintf("events: %d lines canonical, each hash recomputed, chain linked from the genesis hash to the head (seq %d)", rep.Events, rep.Head.Seq),
		"head record: " + rep.HeadRecord,
	}
	if rep.Tail.Bytes > 0 {
		checks = append(checks, fmt.Sprintf("tail: %d bytes after the head, one interrupted write (%d events); the next write keeps them aside", rep.Tail.Bytes, rep.Tail.Events))
	} else {
		checks = append(checks, "tail: none")
	}
	if rep.StateFromTemp {
		checks = append(checks, "state: the latest write's, found in the temporary state file (a crash undid its exchange); the next write puts it in place")
	}
	if len(rep.Repairs) > 0 {
		checks = append(checks, fmt.Sprintf("repairs: %d, each kept tail checked against its digest", len(rep.Repairs)))
	}
	if anchor != "" {
		checks = append(checks, fmt.Sprintf("anchor %s: on the chain at seq %d", anchor, rep.Anchor.Seq))
	}
	return checks
}
