package expr

import (
	"sync"
	"testing"
)

// One Program evaluated from many goroutines at once (run with -race).
func TestConcurrentEval(t *testing.T) {
	p, err := Compile(`matches(result.label, '^[a-z]+-\\d+$') && len(result.label) > 3 && 'b' in input.tags && str(result) != ''`)
	if err != nil {
		t.Fatal(err)
	}
	b := mustBindings(t, `{"result": {"label": "build-42"}, "input": {"tags": ["a", "b"]}}`)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				v, err := p.Eval(b, nil)
				if err != nil || v != true {
					t.Errorf("Eval = %v, %v", v, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
