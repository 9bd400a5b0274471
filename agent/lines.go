package agent

import "bytes"

// lineSplitter is an io.Writer that hands each complete line written to it
// to fn, without the newline, as the child writes it, so that a stream is
// handled as it arrives and never accumulates. A line longer than max is
// cut: with keepLong fn gets its first max bytes, otherwise it is skipped.
// Write never fails (proc's contract for a Spec.Stdout writer).
type lineSplitter struct {
	max      int
	keepLong bool
	fn       func(line []byte)

	line []byte
	over bool // the current line has passed max
}

func (s *lineSplitter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !s.over {
			if room := s.max - len(s.line); len(chunk) > room {
				if s.keepLong {
					s.line = append(s.line, chunk[:room]...)
				} else {
					s.line = s.line[:0]
				}
				s.over = true
			} else {
				s.line = append(s.line, chunk...)
			}
		}
		if i < 0 {
			break
		}
		s.emit()
		p = p[i+1:]
	}
	return n, nil
}

func (s *lineSplitter) emit() {
	if !s.over || s.keepLong {
		s.fn(s.line)
	}
	s.line = s.line[:0]
	s.over = false
}

// finish handles a last line without a trailing newline and frees the
// buffer.
func (s *lineSplitter) finish() {
	if len(s.line) > 0 || (s.over && s.keepLong) {
		s.emit()
	}
	s.line = nil
}
