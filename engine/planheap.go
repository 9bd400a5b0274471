package engine

import (
	"bytes"

	"github.com/stratum-go/stratum/ir"
)

// The plan cache is bounded by bytes (docs/engine.md, "Cost"), so what it
// counts for a plan must cover what the plan comes to hold as its runs go,
// not only what compiling it made: its outline (built at the first load),
// its expressions compiled at their first evaluation (and their literal
// regex patterns at theirs), the reach sets of its
// routing targets and the contract digests of its steps. Each part's
// rate is a measured figure with headroom (TestPlanHeapWithinEstimate holds
// the whole to it for the shapes that take the most).
const (
	// planBytesPerSpecByte covers the plan itself: 10 to 17 bytes of heap
	// per byte of the spec's JSON, by the spec's shape (7.6 MB for a
	// 10,000-step spec of 657 KB; the most for terse one-line steps).
	planBytesPerSpecByte = 20
	// outlineBytesPerStep: an outline's step is about 50 bytes.
	outlineBytesPerStep = 64
	// A compiled expression: 700 to 2,700 bytes, about 40 per byte of its
	// source beyond a fixed part (its syntax tree, the cache's entry).
	programBytes, programBytesPerSourceByte = 768, 40
	// A literal regex pattern, compiled at its first evaluation, takes
	// about 45 bytes a state (91 KB for a{2000}).
	patternStateBytes = 64
	// A reach set is a bit per step of its flow, in a map entry.
	reachSetBytes = 96
	// A step contract's descriptor is kept when it includes at most
	// maxKeptClosure contracts (an entry each), else only its digest; each
	// contract's field map is made once.
	descriptorBytes, descriptorEntryBytes = 256, 64
	fieldMapBytes, fieldBytes             = 256, 64
)

// heapEstimate over-estimates the heap a compiled plan holds once every
// part of it has been used.
func heapEstimate(p *ir.Plan, specJSON []byte) int {
	n := planBytesPerSpecByte*len(specJSON) + programBytes*p.Expressions + programBytesPerSourceByte*p.ExpressionBytes +
		patternStateBytes*p.PatternStates
	for _, ct := range p.Contracts {
		n += fieldMapBytes + fieldBytes*len(ct.Fields)
	}
	outs := map[string]bool{}
	for _, f := range p.Flows {
		n += outlineBytesPerStep * len(f.Steps)
		targets := map[string]bool{}
		for _, s := range f.Steps {
			targets[s.OnFail] = true
			if s.Gate != nil {
				targets[s.Gate.OnKill] = true
			}
			outs[s.Out] = true
			if s.Fanout != nil {
				for _, st := range s.Fanout.Stages {
					outs[st.Out] = true
				}
			}
		}
		delete(targets, "")
		n += len(targets) * (reachSetBytes + 8*((len(f.Steps)+63)/64))
	}
	delete(outs, "")
	for name := range outs {
		n += descriptorBytes + descriptorEntryBytes*keptClosure(p.Contract(name))
	}
	return n
}

// keptClosure is the number of contracts a kept descriptor of ct includes:
// ct and every contract its fields reach, or 0 when they are more than
// maxKeptClosure (the descriptor is not kept). It visits at most
// maxKeptClosure+1 contracts.
func keptClosure(ct *ir.Contract) int {
	n := 0
	if !eachIncluded(ct, func(*ir.Contract) bool { n++; return n <= maxKeptClosure }) {
		return 0
	}
	return n
}

// What the decoded-state cache counts for a run (remember): its document
// decoded, the spec snapshot when it holds one, its cold index, and what
// it holds outside the document: its input and its fanouts' arrays and
// settled items, by the records they came from or went to, and every
// item. Rates measured and given headroom as the plan's
// (TestRunStateHeapWithinEstimate).
const (
	// coldRefBytes: an entry of the cold index (a finished step's id,
	// seq and status in a map), about 140 bytes.
	coldRefBytes = 200
	// itemBytes: an item of a fanout, pristine (not yet started) or not.
	itemBytes = 512
)

// runHeapEstimate over-estimates the heap of a decoded run state. It
// costs the live steps, not the run's history.
func runHeapEstimate(doc []byte, st *runState) int {
	n := decodedBytes(doc) + len(st.Spec) + coldRefBytes*len(st.cold) + st.inputBytes
	var walk func(steps map[string]*stepState)
	walk = func(steps map[string]*stepState) {
		for _, ss := range steps {
			if ss == nil {
				continue
			}
			if f := ss.Fanout; f != nil {
				n += itemBytes*len(f.Items) + f.held
			}
			if ss.Sub != nil {
				walk(ss.Sub.Steps)
			}
		}
	}
	walk(st.Steps)
	return n
}

// decodedBytes over-estimates the heap that decoding the JSON text b takes:
// twice its bytes (the strings, and room), and 64 bytes for each value in
// an array or object and each member of an object (decoded, a number costs
// about 24 bytes beside its text, a boxed value and its slot; an object
// about 80, and about 40 more per member). The separators are counted in
// the whole text, strings included (which only over-counts), so that the
// count is a few vectorised passes: it runs on every transition's
// document.
func decodedBytes(b []byte) int {
	seps := bytes.Count(b, comma) + bytes.Count(b, colon) + bytes.Count(b, openArray) + bytes.Count(b, openObject)
	return 2*len(b) + decodedValueBytes*seps
}

var comma, colon, openArray, openObject = []byte{','}, []byte{':'}, []byte{'['}, []byte{'{'}

// decodedValueBytes is what decodedBytes counts per value and per member.
const decodedValueBytes = 64
