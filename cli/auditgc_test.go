package cli

import "testing"

func TestTightenGC(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	percent, limit := gcSettings()
	restore := tightenGC()
	if p, l := gcSettings(); p != auditGCPercent || l != limit {
		t.Errorf("during an audit: GC percent %d, memory limit %d; want %d and %d", p, l, auditGCPercent, limit)
	}
	restore()
	if p, l := gcSettings(); p != percent || l != limit {
		t.Errorf("after: GC percent %d, memory limit %d; want %d, %d back", p, l, percent, limit)
	}
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, "200")
			defer tightenGC()()
			if p, _ := gcSettings(); p != percent {
				t.Errorf("with %s set: GC percent %d, want it untouched (%d)", env, p, percent)
			}
		})
	}
}
