package cli

import (
	"testing"
	"time"

	"github.com/stratum-go/stratum/agent"
	"github.com/stratum-go/stratum/policy"
)

// Every agent attempt's options pass through stepAgentOptions: under
// stratum mcp (no limit of its own) an attempt gets the policy's bound,
// under stratum run its --attempt-timeout cut to the bound.
func TestStepAgentOptionsBoundTheTimeLimit(t *testing.T) {
	cases := []struct {
		name  string
		mode  policy.Mode
		flags policy.Flags
		asked time.Duration
		want  time.Duration
	}{
		{"mcp default", policy.Server, policy.Flags{}, 0, 30 * time.Minute},
		{"mcp --max-agent-timeout 1s", policy.Server, policy.Flags{MaxAgentTimeout: policy.OptDuration{Given: true, Value: time.Second}}, 0, time.Second},
		{"mcp --max-agent-timeout 2h", policy.Server, policy.Flags{MaxAgentTimeout: policy.OptDuration{Given: true, Value: 2 * time.Hour}}, 0, 2 * time.Hour},
		{"run default", policy.Person, policy.Flags{}, DefaultAttemptTimeout, DefaultAttemptTimeout},
		{"run no limit", policy.Person, policy.Flags{}, 0, 0},
		{"run over the bound", policy.Person, policy.Flags{MaxAgentTimeout: policy.OptDuration{Given: true, Value: time.Second}}, time.Hour, time.Second},
		{"run within the bound", policy.Person, policy.Flags{MaxAgentTimeout: policy.OptDuration{Given: true, Value: time.Hour}}, time.Minute, time.Minute},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := policy.New(policy.Options{Command: "stratum test", Mode: c.mode, Flags: c.flags, WorkDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			o := stepAgentOptions(func() *policy.Policy { return p })("draft", agent.Options{Timeout: c.asked, Model: "m"})
			if o.Timeout != c.want || o.Model != "m" {
				t.Fatalf("options %+v, want the time limit %s and the model kept", o, c.want)
			}
		})
	}
}
