package store

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
)

// runView is what a check of a file run reads apart from the interior of
// its log: the head record, the state, the log's head line and whatever
// follows the head.
type runView struct {
	env        envelope
	rec        headRecord
	hasRec     bool
	recState   string     // HeadRecordMatch, Missing or Behind
	recFile    *smallFile // the head file, open for writing (write views)
	log        *smallFile
	size       int64 // the log's size (LogSize plus the tail)
	headOffset int64 // where the head's line starts (-1 without events)
	tail       Tail
	tailData   []byte
	// choice is how latestState chose the state: choice.adopted when it
	// is the temporary file's (a writer puts it back in place first).
	choice stateChoice
	// pending are tails kept aside by a repair at this head whose write
	// did not complete (only read for writes and Verify).
	pending []keptFile
}

func (v *runView) close() {
	if v.log != nil {
		v.log.Close()
	}
	if v.recFile != nil {
		v.recFile.Close()
	}
}

func (v *runView) head() Head { return Head{Seq: v.env.Seq, Hash: v.env.Head} }

// inspect reads a run and applies the rules of integrity.go. The head
// record is read before the state: writers write it after the state, so
// a reader without the lock never sees a record newer than the state it
// reads next (it may see an older one, or a tail being written; callers
// without the lock confirm any complaint under it, see Load). write opens
// the log for appending; full also looks for pending kept tails.
func (s *FileStore) inspect(id string, write, full bool, rf runFS) (*runView, error) {
	v := &runView{}
	var err error
	v.rec, v.hasRec, v.recFile, err = s.openHeadRecord(id, write)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			v.close()
		}
	}()
	var rec *headRecord
	if v.hasRec {
		rec = &v.rec
	}
	if v.choice, err = s.latestState(id, rf, write, rec); err != nil {
		return nil, err
	}
	v.env, v.log, v.size, v.headOffset = v.choice.env, v.choice.log, v.choice.size, v.choice.headOffset
	state, ce := judgeRecord(id, v.env, v.rec, v.hasRec)
	if ce != nil {
		return nil, s.located(id, ce)
	}
	v.recState = state
	if state == HeadRecordBehind {
		if err := s.checkBehind(id, v); err != nil {
			return nil, err
		}
	}
	if v.size > v.env.LogSize {
		if v.size-v.env.LogSize > maxTailRead {
			return nil, s.located(id, tailCorrupt(id, v.env, Tail{Bytes: v.size - v.env.LogSize,
				Reason: fmt.Sprintf("more than %d bytes, far more than one write", maxTailRead)}))
		}
		v.tailData = make([]byte, v.size-v.env.LogSize)
		if _, err := v.log.ReadAt(v.tailData, v.env.LogSize); err != nil {
			return nil, fmt.Errorf("run %s: read the log after the head: %w", id, err)
		}
		v.tail = classifyTail(v.tailData, v.head())
		if !v.tail.Chained {
			return nil, s.located(id, tailCorrupt(id, v.env, v.tail))
		}
	} else {
		v.tail.Chained = true
	}
	if full {
		if v.pending, err = s.pendingKept(id, v.head(), rf); err != nil {
			return nil, err
		}
	}
	ok = true
	return v, nil
}

// checkBehind confirms that a head record one write behind the state names
// an event of the chain: the head the previous write left.
func (s *FileStore) checkBehind(id string, v *runView) error {
	if v.rec.Seq == v.env.Seq {
		if v.rec.Hash != v.env.Head {
			return s.located(id, &CorruptError{RunID: id, Part: PartHead, Seq: v.rec.Seq, Offset: -1,
				Reason: fmt.Sprintf("the head record names hash %s for seq %d, the log has %s", v.rec.Hash, v.rec.Seq, v.env.Head)})
		}
		return nil
	}
	if v.rec.Seq == 0 {
		if v.rec.Hash != genesisHash(id) {
			return s.located(id, &CorruptError{RunID: id, Part: PartHead, Offset: -1, Reason: "the head record names seq 0 with a hash other than the genesis hash"})
		}
		return nil
	}
	ev, err := s.eventAt(id, v.env, v.log, v.rec.Seq)
	if err != nil {
		return err
	}
	if ev.Hash != v.rec.Hash {
		return s.located(id, &CorruptError{RunID: id, Part: PartHead, Seq: v.rec.Seq, Offset: -1,
			Reason: fmt.Sprintf("the head record names hash %s for seq %d, the log has %s", v.rec.Hash, v.rec.Seq, ev.Hash)})
	}
	return nil
}

// keptFile is a tail kept aside, as found beside the log.
type keptFile struct {
	KeptTail
	data []byte
}

// keptName is the file a repair at head seq keeps its i-th tail in.
func keptName(seq int64, i int) string { return fmt.Sprintf("tail-after-%d.%d.jsonl", seq, i) }

// pendingKept returns the tails kept aside at head seq by a repair whose
// write did not complete. A completed repair moves the head past seq, so
// these names are looked up, not listed: one stat on the usual path.
func (s *FileStore) pendingKept(id string, head Head, rf runFS) ([]keptFile, error) {
	var out []keptFile
	for i := 1; ; i++ {
		name := keptName(head.Seq, i)
		data, err := readWhole(rf, name)
		if errors.Is(err, fs.ErrNotExist) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("run %s: read kept tail %s: %w", id, name, err)
		}
		out = append(out, keptFile{KeptTail: keptTail(name, data, classifyTail(data, head)), data: data})
	}
}

// alreadyKept reports whether data is the content of one of kept.
func alreadyKept(kept []keptFile, data []byte) bool {
	for _, k := range kept {
		if bytes.Equal(k.data, data) {
			return true
		}
	}
	return false
}
