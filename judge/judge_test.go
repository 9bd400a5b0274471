package judge

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/internal/proctest"
)

// script writes an executable shell script and returns a command line
// that runs it.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "judge.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCommandJudgeRoundTrip(t *testing.T) {
	dir := t.TempDir()
	reqFile := filepath.Join(dir, "req.json")
	// The judge echoes what it received into a file and holds iff the
	// criterion mentions "complete".
	cmd := script(t, `cat > '`+reqFile+`'
if grep -q complete '`+reqFile+`'; then
  printf '{"holds": true, "reason": "looks complete", "model": "fake-1", "usage": {"tokens": 42}, "extra": 1}'
else
  printf '{"holds": false, "reason": "not complete"}'
fi
`)
	j := &CommandJudge{Command: cmd + " --flag 'quoted arg'"}
	req := Request{Criterion: "review is complete", Stakes: "paranoid", Context: map[string]any{"result": map[string]any{"edge": "a->b"}}}
	v, err := j.Judge(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Verdict{Holds: true, Reason: "looks complete", Model: "fake-1", Usage: Usage{Tokens: 42}}); v != want {
		t.Fatalf("verdict %+v, want %+v", v, want)
	}
	var got map[string]any
	data, _ := os.ReadFile(reqFile)
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if got["criterion"] != "review is complete" || got["stakes"] != "paranoid" || got["context"].(map[string]any)["result"].(map[string]any)["edge"] != "a->b" {
		t.Fatalf("judge received %s", data)
	}
	v, err = j.Judge(context.Background(), Request{Criterion: "tests pass", Stakes: "default"})
	if err != nil || v.Holds || v.Reason != "not complete" {
		t.Fatalf("second verdict %+v, %v", v, err)
	}
}

func TestCommandJudgeFailures(t *testing.T) {
	cases := []struct{ body, want string }{
		{`echo oops >&2; exit 3`, "exit status 3: oops"},
		{`echo 'not json'`, "not a JSON object"},
		{`echo '{"reason": "x"}'`, `boolean "holds"`},
		{`echo '{"holds": "yes"}'`, `boolean "holds"`},
		{`echo '{"holds": null}'`, `boolean "holds"`},
		{`echo '{"holds": true, "reason": 5}'`, `"reason" is not a string`},
		{`echo '{"holds": true, "usage": {"tokens": 1.5}}'`, `"usage"`},
		{`echo '{"holds": true} {"holds": false}'`, "data after"},
		{`echo '[true]'`, "not a JSON object"},
		{`cat /dev/zero | head -c 3000000`, "too large"},
	}
	for _, c := range cases {
		j := &CommandJudge{Command: script(t, c.body)}
		_, err := j.Judge(context.Background(), Request{Criterion: "x"})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.body, err, c.want)
		}
	}
	var tooLarge error
	_, tooLarge = (&CommandJudge{Command: "head -c 100 /dev/zero", MaxOutput: 10}).Judge(context.Background(), Request{})
	if !errors.Is(tooLarge, ErrOutputTooLarge) {
		t.Errorf("MaxOutput: %v", tooLarge)
	}
}

// TestCommandJudgeTimeout: a judge that hangs (with a background child)
// is killed as a whole group.
func TestCommandJudgeTimeout(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	j := &CommandJudge{Command: "sleep 60 & echo $! > '" + pidFile + "'; wait", Timeout: 300 * time.Millisecond}
	_, err := j.Judge(context.Background(), Request{Criterion: "x"})
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("error %v, want a timeout", err)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	if !proctest.WaitGone(pid, 10*time.Second) {
		proctest.Kill(pid)
		t.Fatalf("background child %d survived the timeout", pid)
	}
}

func TestFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	j, err := FromEnv(env(nil))
	if err != nil || j != nil {
		t.Fatalf("unset: %v %v", j, err)
	}
	j, err = FromEnv(env(map[string]string{EnvCommand: " my-judge --x ", EnvTimeout: "7"}))
	if err != nil {
		t.Fatal(err)
	}
	cj := j.(*CommandJudge)
	if cj.Command != "my-judge --x" || cj.Timeout != 7*time.Second {
		t.Fatalf("%+v", cj)
	}
	for _, bad := range []string{"0", "-1", "1.5", "x"} {
		if _, err := FromEnv(env(map[string]string{EnvCommand: "j", EnvTimeout: bad})); err == nil {
			t.Errorf("timeout %q accepted", bad)
		}
	}
}
