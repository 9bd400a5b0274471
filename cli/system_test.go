package cli

import (
	"testing"
	"time"

	"github.com/stratum-go/stratum/judge"
	"github.com/stratum-go/stratum/policy"
)

// The judge is a command: its time limit is cut to the policy's bound on
// commands, and left alone under it.
func TestJudgeTimeoutBoundedByPolicy(t *testing.T) {
	home := t.TempDir()
	for _, tc := range []struct {
		env   string // STRATUM_JUDGE_TIMEOUT_S
		bound time.Duration
		want  time.Duration
	}{
		{"600", 5 * time.Second, 5 * time.Second},
		{"", 30 * time.Second, 30 * time.Second}, // the 120 s default, cut
		{"10", 30 * time.Second, 10 * time.Second},
		{"", 0, 0}, // no bound given: the default 10 min bound leaves the 120 s default (0) alone
		{"900", 0, policy.DefaultMaxCommandTimeout}, // and cuts a longer one
	} {
		env := &Env{Getenv: func(k string) string {
			switch k {
			case "STRATUM_HOME":
				return home
			case judge.EnvCommand:
				return "true"
			case judge.EnvTimeout:
				return tc.env
			}
			return ""
		}}
		var flags policy.Flags
		if tc.bound > 0 {
			flags.MaxCommandTimeout = policy.OptDuration{Given: true, Value: tc.bound}
		}
		sys, err := openSystem(env, systemConfig{command: "stratum run", mode: policy.Person, flags: flags})
		if err != nil {
			t.Fatal(err)
		}
		got := sys.judge.(*judge.CommandJudge).Timeout
		sys.Close()
		if got != tc.want {
			t.Errorf("STRATUM_JUDGE_TIMEOUT_S=%q, bound %v: judge timeout %v, want %v", tc.env, tc.bound, got, tc.want)
		}
	}
}
