package expr

import (
	"fmt"
	"testing"
)

// A pattern computed at evaluation time is compiled once and then found
// in the cache; what an evaluation is charged, and its verdict, do not
// depend on whether it was.
func TestDynamicPatternCache(t *testing.T) {
	p, err := Compile(`matches(result, input)`)
	if err != nil {
		t.Fatal(err)
	}
	const pattern = `^cache-test-[a-z]{3}$`
	b := Bindings{Result: Bind("cache-test-abc"), Input: Bind(pattern)}
	v1, st1, e1 := p.runStats(t0ctx, b, nil, nil)
	pc := dynamicPatterns.lookup(pattern)
	if pc == nil || pc.re == nil {
		t.Fatal("the pattern was not kept compiled")
	}
	v2, st2, e2 := p.runStats(t0ctx, b, nil, nil)
	if e1 != nil || e2 != nil || v1 != true || v2 != true || st1.work != st2.work {
		t.Errorf("first %v %v (%d units), second %v %v (%d units)", v1, e1, st1.work, v2, e2, st2.work)
	}
	// A refused pattern is kept with its refusal.
	bad := Bindings{Result: Bind("x"), Input: Bind(`cache-test-a*a*`)}
	for range 2 {
		if _, err := p.Eval(bad, nil); err == nil || err.(*Error).Code != CodeValidation {
			t.Errorf("refused pattern: %v", err)
		}
	}
	if dynamicPatterns.lookup(`cache-test-a*a*`) == nil {
		t.Error("the refusal was not kept")
	}
}

func TestPatternLRUBounds(t *testing.T) {
	c := &patternLRU{entries: map[string]*lruEntry{}}
	compiled := func(pattern string) *patternCache {
		pc := newPattern(pattern)
		pc.compiled()
		return pc
	}
	for i := range 3 * patternCacheSize {
		c.add(compiled(fmt.Sprintf("^p%d$", i)))
	}
	if len(c.entries) != patternCacheSize {
		t.Errorf("%d entries, want %d", len(c.entries), patternCacheSize)
	}
	if c.lookup("^p0$") != nil || c.lookup(fmt.Sprintf("^p%d$", 3*patternCacheSize-1)) == nil {
		t.Error("not the least recently used entries evicted")
	}
	// Large patterns are bounded by their states: 4,096 states each.
	for i := range 40 {
		c.add(compiled(fmt.Sprintf(".{4095}%d", i)))
	}
	if c.states > patternCacheStates {
		t.Errorf("%d states kept, over %d", c.states, patternCacheStates)
	}
	n := 0
	for e := c.head; e != nil; e = e.next {
		n += e.states
	}
	if n != c.states || len(c.entries) > patternCacheSize {
		t.Errorf("list counts %d states, the cache %d; %d entries", n, c.states, len(c.entries))
	}
}
