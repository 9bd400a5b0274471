//go:build unix

package agent

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestCommandProtocol(t *testing.T) {
	dir := t.TempDir()
	got := filepath.Join(dir, "stdin.json")
	// A well-behaved agent: saves its input, checks it is run in the
	// request's workdir, answers with a pretty-printed object.
	agent := writeScript(t, dir, "agent", `#!/bin/sh
cat > "`+got+`"
[ "$(pwd)" = "`+dir+`" ] || { echo "wrong directory $(pwd)" >&2; exit 9; }
printf '\n  {"summary": "ok",\n   "confidence": 0.9}\n\n'
echo "log line on stderr" >&2
`)
	req := sampleRequest()
	req.Workdir = dir
	res, err := (&Command{Argv: []string{agent}}).Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failure != "" {
		t.Fatalf("failure: %s", res.Failure)
	}
	if s := encode(t, res.Output); s != `{"summary":"ok","confidence":0.9}` {
		t.Errorf("output %s", s)
	}
	if res.Telemetry == nil || res.Telemetry.Model != "agent" || res.Telemetry.DurationMs < 0 {
		t.Errorf("telemetry %+v", res.Telemetry)
	}
	// Only the measured time: a command reports no tokens.
	if u := res.Usage; u == nil || u.Ms != float64(res.Telemetry.DurationMs) || u.Tokens != 0 || u.USD != nil {
		t.Errorf("usage %+v, want the measured time only", res.Usage)
	}
	if res.Stderr != "log line on stderr" {
		t.Errorf("stderr kept for the audit %q", res.Stderr)
	}

	stdin, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"runId":"run-1","stepId":"draft","task":"Write a short summary of README.md.","agent":"claude","attempt":2,"sandbox":"read-only",` +
		`"contract":{"name":"Draft","fields":[{"name":"summary","type":"string","optional":false},{"name":"confidence","type":"number","optional":false},` +
		`{"name":"tags","type":"string[]","optional":false},{"name":"level","type":"low|high","optional":false},` +
		`{"name":"findings","type":"Finding[]","optional":false},{"name":"note","type":"string?","optional":true}],` +
		`"contracts":[{"name":"Finding","fields":[{"name":"line","type":"integer","optional":false},{"name":"ok","type":"boolean","optional":false}]}]},` +
		`"previousFailure":{"attempt":1,"reason":"ensure failed: result.confidence >= 0.8"}}` + "\n"
	if string(stdin) != want {
		t.Errorf("stdin\n got %s\nwant %s", stdin, want)
	}

	// A first attempt without a contract sends explicit nulls; the
	// configured options that make sense to any agent are passed on.
	first := Request{RunID: "r", StepID: "s", Task: "t", Agent: "claude", Attempt: 1,
		Options: Options{Sandbox: SandboxReadOnly, Model: "opus", Effort: "high", Timeout: 90 * time.Second}, Sandbox: SandboxWorkspaceWrite}
	if _, err := (&Command{Argv: []string{agent}}).Run(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	stdin, _ = os.ReadFile(got)
	want = `{"runId":"r","stepId":"s","task":"t","agent":"claude","attempt":1,` +
		`"sandbox":"workspace-write","model":"opus","effort":"high","timeoutMs":90000,"contract":null,"previousFailure":null}` + "\n"
	if string(stdin) != want {
		t.Errorf("stdin\n got %s\nwant %s", stdin, want)
	}
}

func TestCommandProgressAndStart(t *testing.T) {
	dir := t.TempDir()
	agent := writeScript(t, dir, "agent", `#!/bin/sh
cat >/dev/null
echo "reading README.md" >&2
printf 'a very long line %s\n' "$(head -c 1000 /dev/zero | tr '\0' x)" >&2
printf 'last words' >&2
echo $$
`)
	var lines []string
	var rec ProcessRecord
	req := sampleRequest()
	req.Options = Options{Progress: func(l string) { lines = append(lines, l) }, Started: func(r ProcessRecord) { rec = r }}
	res, err := (&Command{Argv: []string{agent}}).Run(context.Background(), req)
	if err != nil || res.Failure != "" {
		t.Fatal(err, res.Failure)
	}
	if len(lines) != 3 || lines[0] != "agent: reading README.md" || !strings.HasPrefix(lines[1], "agent: a very long line xxx") ||
		len(lines[1]) > maxProgressLine+3 || lines[2] != "agent: last words" {
		t.Errorf("progress %q", lines)
	}
	if encode(t, res.Output) != strconv.Itoa(rec.Pid) || (runtime.GOOS == "linux" && rec.StartTime == 0) {
		t.Errorf("record %+v, agent said pid %s", rec, encode(t, res.Output))
	}
}

func TestCommandFailures(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		limit   int
		timeout time.Duration
		want    string // prefix of the failure
		wantIn  string // also contained in the failure
	}{
		{name: "garbage", body: "echo 'Sure! Here is the JSON: {\"a\": 1}'", want: "agent printed invalid JSON (", wantIn: `output began "Sure! Here is the JSON`},
		{name: "two values", body: `echo '{"a":1} {"b":2}'`, want: "agent printed invalid JSON (", wantIn: "unexpected data after the value"},
		{name: "empty", body: "echo '   '", want: "agent printed nothing on stdout"},
		{name: "non-zero exit", body: "echo '{\"a\":1}'; echo 'first line' >&2; echo 'model quota exceeded' >&2; exit 3", want: "agent exited with status 3: first line\nmodel quota exceeded"},
		{name: "non-zero exit, silent", body: "exit 1", want: "agent exited with status 1 (no output on stderr)"},
		{name: "killed by a signal", body: "echo dying >&2; kill -9 $$", want: `agent was killed by signal "killed": dying`},
		{name: "huge output", body: "head -c 50000000 /dev/zero | tr '\\0' x", limit: 1 << 20, want: "agent printed 50000000 bytes on stdout, over the 1048576-byte output limit"},
		{name: "huge stderr is cut to its tail", body: "head -c 1000000 /dev/zero | tr '\\0' e >&2; echo THE END >&2; exit 2", want: "agent exited with status 2: ...eee", wantIn: "eeeTHE END"},
		{name: "timeout", body: "sleep 30", timeout: 200 * time.Millisecond, want: "agent timed out after 200ms (the attempt's time limit); its process group was stopped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			agent := writeScript(t, t.TempDir(), "agent", "#!/bin/sh\n"+tt.body+"\n")
			req := sampleRequest()
			req.Timeout = tt.timeout
			res, err := (&Command{Argv: []string{agent}, OutputLimit: tt.limit}).Run(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(res.Failure, tt.want) || !strings.Contains(res.Failure, tt.wantIn) {
				t.Errorf("failure %q\nwant prefix %q containing %q", res.Failure, tt.want, tt.wantIn)
			}
			if len(res.Failure) > maxReasonTail+200 {
				t.Errorf("failure is %d bytes long", len(res.Failure))
			}
			if res.Output != nil {
				t.Errorf("output %v on a failed attempt", res.Output)
			}
		})
	}
}

func TestCommandHangKillsGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	// The agent ignores SIGTERM, never ends by itself and leaves a
	// grandchild in its group: only the SIGKILL after the grace period ends
	// it, so no duration needs comparing (without it Run would not return).
	agent := writeScript(t, dir, "agent", `#!/bin/sh
trap '' TERM
sleep 300 &
echo $! > "`+pidFile+`"
while :; do sleep 1; done
`)
	req := sampleRequest()
	req.Timeout = 300 * time.Millisecond
	res, err := (&Command{Argv: []string{agent}}).Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failure != "agent timed out after 300ms (the attempt's time limit); its process group was stopped" {
		t.Errorf("failure %q", res.Failure)
	}
	assertDead(t, pidFile)
}

func TestCommandCancel(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	agent := writeScript(t, dir, "agent", "#!/bin/sh\nsleep 300 &\necho $! > \""+pidFile+"\"\nwait\n")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Wait for the whole pid line: the shell creates the file before
		// it writes to it, and a cancel in between would leave it empty.
		for {
			if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	_, err := (&Command{Argv: []string{agent}}).Run(ctx, sampleRequest())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	assertDead(t, pidFile)
}

func TestCommandNotFound(t *testing.T) {
	notFound := func(string) (string, error) { return "", errors.New("nope") }
	_, err := (&Command{Argv: []string{"my-agent"}, LookPath: notFound}).Run(context.Background(), sampleRequest())
	var nf *NotFoundError
	if !errors.As(err, &nf) || !errors.Is(err, ErrNotFound) || err.Error() != `agent command "my-agent" not found` {
		t.Errorf("err = %v", err)
	}
	_, err = (&Command{Argv: []string{"./no/such/agent"}}).Run(context.Background(), sampleRequest())
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("missing path: err = %v", err)
	}
	if _, err := (&Command{}).Run(context.Background(), sampleRequest()); err == nil {
		t.Error("empty argv accepted")
	}
}

func TestCommandRelativePath(t *testing.T) {
	// A relative program path names a file relative to Stratum's working
	// directory, even when the agent runs in another directory.
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(wd, "rel-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	writeScript(t, dir, "agent", "#!/bin/sh\necho '\"hi\"'\n")
	req := sampleRequest()
	req.Workdir = t.TempDir()
	res, err := (&Command{Argv: []string{"./" + filepath.Base(dir) + "/agent"}}).Run(context.Background(), req)
	if err != nil || res.Failure != "" || res.Output != "hi" {
		t.Errorf("res %+v err %v", res, err)
	}
}

func TestContractJSON(t *testing.T) {
	c := sampleRequest().Contract
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back Contract
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	b2, _ := json.Marshal(&back)
	if string(b) != string(b2) {
		t.Errorf("round trip\n%s\n%s", b, b2)
	}
}
