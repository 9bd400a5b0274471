package engine

import (
	"bytes"
	"testing"
)

// The blob cache keeps to its byte budget counting the decoded forms it
// holds, and its count never drifts from its entries.
func TestBlobCacheCountsDecodedForms(t *testing.T) {
	c := &blobCache{limit: 10_000}
	check := func(when string) {
		t.Helper()
		sum := 0
		for k := range c.byKey {
			sum += c.entrySize(k)
		}
		if sum != c.size || c.size > c.limit {
			t.Fatalf("%s: size %d, entries add up to %d, limit %d", when, c.size, sum, c.limit)
		}
		for k := range c.parsed {
			if _, ok := c.byKey[k]; !ok {
				t.Fatalf("%s: a decoded form outlived its payload %v", when, k)
			}
		}
	}
	payload := bytes.Repeat([]byte("x"), 300)
	const heap = 1200 // what a decoded form counts here
	for i := int64(1); i <= 40; i++ {
		c.put("r", i, payload)
		check("put")
		if i%2 == 0 {
			c.putParsed("r", i, i, heap)
			check("putParsed")
		}
	}
	if v, n, ok := c.getParsed("r", 40); !ok || v != int64(40) || n != heap {
		t.Fatalf("the newest decoded form: %v, %d, %v", v, n, ok)
	}
	// Pairs of entries, one with its decoded form, count 300+1500 bytes:
	// the budget holds 5 pairs and one payload, where payloads alone would
	// fill it with 33.
	if len(c.byKey) > 11 || len(c.parsed) != 5 {
		t.Fatalf("%d entries, %d decoded", len(c.byKey), len(c.parsed))
	}
	// A decoded form too large to count is not kept; its payload stays.
	large := bytes.Repeat([]byte("y"), c.limit/8)
	c.put("r", 100, large)
	c.putParsed("r", 100, "large", c.limit/4+1)
	check("a large decoded form")
	if _, _, ok := c.getParsed("r", 100); ok {
		t.Fatal("a decoded form over a quarter of the budget was kept")
	}
	if _, ok := c.get("r", 100); !ok {
		t.Fatal("its payload went with it")
	}
}
