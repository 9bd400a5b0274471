package yamlerr

import "gopkg.in/yaml.v3"

// maxProbeBytes bounds the text blockProblem re-parses in all: a few times
// an ordinary spec, so that a huge broken document costs a bounded time.
const maxProbeBytes = 8 << 20

// blockProblem places an error in a block mapping or list ("did not find
// expected key", "did not find expected '-' indicator"): yaml.v3 names the
// line where the collection starts, not the badly indented line. A block
// collection is complete at the end of any prefix of whole lines, so the
// first prefix of the document on which yaml.v3 reports the same problem
// ends at the offending line; it is found by bisection.
func (l *lines) blockProblem(p *Problem) {
	lo, hi := p.Line-1, l.count() // prefix lo is assumed fine, hi fails
	budget := maxProbeBytes
	for lo+1 < hi {
		mid := (lo + hi) / 2
		prefix := l.src[:l.offset(mid+1)]
		if budget -= len(prefix); budget < 0 {
			hi = 0
			break
		}
		if probe(prefix) == p.Message {
			hi = mid
			continue
		}
		lo = mid
	}
	if hi > 0 && hi <= l.count() {
		p.Line = hi
		p.Column = l.contentColumn(hi)
	}
	if p.Message == "did not find expected key" {
		p.Hint = "this line does not continue the mapping above it: the keys of one mapping start in the same column, and a value on its own lines is indented under its key"
	} else {
		p.Hint = "this line does not continue the list above it: the entries of one list (- ...) start in the same column, and the keys of an entry's mapping align with its first key"
	}
}

// probe parses src and returns yaml.v3's problem, or "" when it parses. A
// panic inside the parser counts as a different problem.
func probe(src []byte) (problem string) {
	defer func() {
		if recover() != nil {
			problem = "parser failed"
		}
	}()
	var n yaml.Node
	if err := yaml.Unmarshal(src, &n); err != nil {
		_, problem = splitMessage(err.Error())
	}
	return problem
}
