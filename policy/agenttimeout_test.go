package policy

import (
	"flag"
	"strings"
	"testing"
	"time"
)

// TestAgentTimeout: the bound of every agent attempt's time limit under
// each way of starting Stratum, what an attempt asking for a limit gets,
// and what the person is told when the bound cuts it.
func TestAgentTimeout(t *testing.T) {
	bound := func(d time.Duration) OptDuration { return OptDuration{Given: true, Value: d} }
	cases := []struct {
		name  string
		opts  Options
		file  string
		bound time.Duration
		// asked -> the limit the attempt gets
		limits map[time.Duration]time.Duration
		// the cut of --attempt-timeout 2h ("" for none)
		cut string
	}{
		{"mcp default", Options{Command: "stratum mcp", Mode: Server}, "", 30 * time.Minute,
			map[time.Duration]time.Duration{0: 30 * time.Minute, time.Minute: time.Minute, 2 * time.Hour: 30 * time.Minute},
			"--attempt-timeout 2h0m0s is over the longest agent time limit, 30m0s (default of stratum mcp): each agent attempt is stopped after 30m0s"},
		{"run default: no bound", Options{Command: "stratum run", Mode: Person}, "", 0,
			map[time.Duration]time.Duration{0: 0, time.Minute: time.Minute, 2 * time.Hour: 2 * time.Hour}, ""},
		{"file", Options{Command: "stratum run", Mode: Person}, "version: 1\nmax_agent_timeout: 1h\n", time.Hour,
			map[time.Duration]time.Duration{0: time.Hour, 30 * time.Minute: 30 * time.Minute, time.Hour: time.Hour, 2 * time.Hour: time.Hour},
			"--attempt-timeout 2h0m0s is over the longest agent time limit, 1h0m0s (max_agent_timeout at POLICY:2): each agent attempt is stopped after 1h0m0s"},
		{"file raises the mcp bound", Options{Command: "stratum mcp", Mode: Server}, "version: 1\nmax_agent_timeout: 3h\n", 3 * time.Hour,
			map[time.Duration]time.Duration{0: 3 * time.Hour, 2 * time.Hour: 2 * time.Hour}, ""},
		{"flag wins over the file", Options{Command: "stratum mcp", Mode: Server, Flags: Flags{MaxAgentTimeout: bound(time.Second)}},
			"version: 1\nmax_agent_timeout: 3h\n", time.Second,
			map[time.Duration]time.Duration{0: time.Second, time.Millisecond: time.Millisecond, time.Hour: time.Second},
			"--attempt-timeout 2h0m0s is over the longest agent time limit, 1s (--max-agent-timeout): each agent attempt is stopped after 1s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := ""
			if c.file != "" {
				path = writeFile(t, c.file)
				c.opts.Flags.File = path
			}
			p := newPolicy(t, c.opts)
			if got := p.MaxAgentTimeout(); got != c.bound {
				t.Errorf("MaxAgentTimeout() = %s, want %s", got, c.bound)
			}
			for asked, want := range c.limits {
				if got := p.AgentTimeout(asked); got != want {
					t.Errorf("AgentTimeout(%s) = %s, want %s", asked, got, want)
				}
			}
			want := strings.ReplaceAll(c.cut, "POLICY", path)
			if got := p.AgentTimeoutCut("--attempt-timeout", 2*time.Hour); got != want {
				t.Errorf("the cut of 2h:\n got %q\nwant %q", got, want)
			}
		})
	}
	// No limit asked for is cut too, and says so.
	p := newPolicy(t, Options{Command: "stratum run", Mode: Person, Flags: Flags{MaxAgentTimeout: bound(time.Hour)}})
	if got, want := p.AgentTimeoutCut("--attempt-timeout", 0), "--attempt-timeout 0 (no limit) is over the longest agent time limit, 1h0m0s (--max-agent-timeout): each agent attempt is stopped after 1h0m0s"; got != want {
		t.Errorf("the cut of no limit:\n got %q\nwant %q", got, want)
	}
	var nilPolicy *Policy
	if got := nilPolicy.AgentTimeout(time.Minute); got != time.Minute {
		t.Errorf("a nil policy bounds nothing: %s", got)
	}
}

// The flag parses like --max-command-timeout, and counts as a policy flag.
func TestMaxAgentTimeoutFlag(t *testing.T) {
	for _, c := range []struct {
		arg  string
		want time.Duration
		err  string
	}{
		{"90s", 90 * time.Second, ""},
		{"2h", 2 * time.Hour, ""},
		{"0", 0, "want a positive duration such as 90s, 10m or 1h, not \"0\""},
		{"-1m", 0, "want a positive duration"},
		{"soon", 0, "want a positive duration"},
	} {
		var f Flags
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.SetOutput(new(strings.Builder))
		f.Register(fs)
		err := fs.Parse([]string{"--max-agent-timeout", c.arg})
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: got %v, want an error saying %q", c.arg, err, c.err)
		case c.err == "" && (err != nil || f.MaxAgentTimeout.Value != c.want || !f.Given()):
			t.Errorf("%s: got %v %+v, want %s", c.arg, err, f.MaxAgentTimeout, c.want)
		}
	}
}
