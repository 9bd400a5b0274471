package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The hostile-spec suite (docs/policy.md): the real `stratum mcp` binary,
// driven over stdio by a scripted JSON-RPC client, is fed what a model or
// a prompt injection inside a spec would try. Fake `claude` and `codex`
// executables first on PATH, a fake judge and every command of the specs
// write marker files, so that "nothing the person did not allow
// happened" is a fact about the file system: the forbidden cases share
// one marker directory that must stay empty. After each case the server
// must still answer tools/list.

// hostile is the machine a hostile case runs on.
type hostile struct {
	t *testing.T
	// base holds everything; ws is the server's working directory (the
	// allowed root by default); outside is a directory next to it with a
	// secret; marks is where the fakes and commands leave markers.
	base, home, ws, outside, marks, bin string
}

func newHostile(t *testing.T) *hostile {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := &hostile{t: t, base: base, home: filepath.Join(base, "home"), ws: filepath.Join(base, "ws"),
		outside: filepath.Join(base, "outside"), marks: filepath.Join(base, "marks"), bin: filepath.Join(base, "bin")}
	for _, d := range []string{h.home, h.ws, h.outside, h.marks, h.bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h.write(filepath.Join(h.outside, "secret"), "s3cr3t\n", 0o600)
	h.write(filepath.Join(h.ws, "notes.txt"), "hello\n", 0o644)
	if err := os.Symlink(h.outside, filepath.Join(h.ws, "escape")); err != nil {
		t.Fatal(err)
	}
	// The fakes record that they were started, and nothing else.
	for _, name := range []string{"claude", "codex"} {
		h.write(filepath.Join(h.bin, name), "#!/bin/sh\necho $$ >> \"$STRATUM_TEST_MARKS/"+name+"\"\ncat >/dev/null\nexit 1\n", 0o755)
	}
	h.write(filepath.Join(h.bin, "judge"), "#!/bin/sh\ncat >/dev/null\necho $$ >> \"$STRATUM_TEST_MARKS/judge\"\n"+
		`echo '{"holds": true, "reason": "fake", "model": "fake", "usage": {"tokens": 1}}'`+"\n", 0o755)
	return h
}

func (h *hostile) write(path, text string, mode os.FileMode) {
	h.t.Helper()
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		h.t.Fatal(err)
	}
}

// markers lists what was left in a marker directory.
func markers(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// rawClient is a scripted JSON-RPC client of one `stratum mcp` process.
type rawClient struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	msgs   chan map[string]any
	stderr *syncWriter
	nextID int
	// roots answers the server's roots/list; with ignoreRoots the
	// request is never answered.
	roots       []string
	ignoreRoots bool
	// asked counts the server's roots/list requests.
	mu    sync.Mutex
	asked int
}

type serverOpts struct {
	args []string
	// marks is the marker directory of this server's fakes and commands
	// (default: the hostile one).
	marks string
	env   []string
	// declareRoots sets the roots capability in initialize.
	declareRoots bool
	roots        []string
	ignoreRoots  bool
	protocol     string
}

// start runs `stratum mcp ARGS` in h.ws and initialises a session.
func (h *hostile) start(o serverOpts) *rawClient {
	t := h.t
	t.Helper()
	bin, _ := buildBinaries(t)
	marks := o.marks
	if marks == "" {
		marks = h.marks
	}
	cmd := exec.Command(bin, append([]string{"mcp"}, o.args...)...)
	cmd.Dir = h.ws
	cmd.Env = append(os.Environ(), "PATH="+h.bin+string(os.PathListSeparator)+os.Getenv("PATH"), "STRATUM_HOME="+h.home,
		"STRATUM_STATE_ROOT=", "STRATUM_JUDGE_COMMAND=", "STRATUM_TEST_MARKS="+marks)
	cmd.Env = append(cmd.Env, o.env...)
	c := &rawClient{t: t, cmd: cmd, msgs: make(chan map[string]any, 64), stderr: &syncWriter{w: new(bytes.Buffer)},
		roots: o.roots, ignoreRoots: o.ignoreRoots}
	cmd.Stderr = c.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.in = in
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				c.msgs <- m
			}
		}
		close(c.msgs)
	}()
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	caps := map[string]any{}
	if o.declareRoots {
		caps["roots"] = map[string]any{"listChanged": true}
	}
	protocol := o.protocol
	if protocol == "" {
		protocol = "2025-06-18"
	}
	c.request("initialize", map[string]any{"protocolVersion": protocol, "capabilities": caps, "clientInfo": map[string]any{"name": "hostile", "version": "0"}})
	c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return c
}

func (c *rawClient) send(m map[string]any) {
	c.t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("write to stratum mcp: %v\nstderr:\n%s", err, c.stderr.String())
	}
}

// request sends a request and returns its result, answering the
// server's own requests meanwhile.
func (c *rawClient) request(method string, params any) map[string]any {
	c.t.Helper()
	c.nextID++
	id := c.nextID
	c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	// A bound so that a hung server fails the test instead of hanging it
	// (no test waits for it to pass).
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case m, ok := <-c.msgs:
			if !ok {
				c.t.Fatalf("%s: stratum mcp closed its output\nstderr:\n%s", method, c.stderr.String())
			}
			if _, isReq := m["method"]; isReq {
				c.serverRequest(m)
				continue
			}
			if got, _ := m["id"].(float64); int(got) != id {
				continue
			}
			if e, ok := m["error"]; ok {
				c.t.Fatalf("%s: JSON-RPC error %v\nstderr:\n%s", method, e, c.stderr.String())
			}
			res, _ := m["result"].(map[string]any)
			return res
		case <-deadline:
			c.t.Fatalf("%s: no answer\nstderr:\n%s", method, c.stderr.String())
		}
	}
}

func (c *rawClient) serverRequest(m map[string]any) {
	if m["method"] != "roots/list" {
		return
	}
	c.mu.Lock()
	c.asked++
	c.mu.Unlock()
	if c.ignoreRoots || m["id"] == nil {
		return
	}
	roots := []any{}
	for _, r := range c.roots {
		roots = append(roots, map[string]any{"uri": "file://" + r, "name": filepath.Base(r)})
	}
	c.send(map[string]any{"jsonrpc": "2.0", "id": m["id"], "result": map[string]any{"roots": roots}})
}

// tool calls a tool and returns its structured answer and isError.
func (c *rawClient) tool(name string, args any) (map[string]any, bool) {
	c.t.Helper()
	res := c.request("tools/call", map[string]any{"name": name, "arguments": args})
	body, _ := res["structuredContent"].(map[string]any)
	isErr, _ := res["isError"].(bool)
	return body, isErr
}

// tools lists the tools by name (and checks the server still answers).
func (c *rawClient) tools() map[string]map[string]any {
	c.t.Helper()
	res := c.request("tools/list", map[string]any{})
	list, _ := res["tools"].([]any)
	if len(list) == 0 {
		c.t.Fatalf("tools/list answered no tools: %v", res)
	}
	out := map[string]map[string]any{}
	for _, x := range list {
		m, _ := x.(map[string]any)
		name, _ := m["name"].(string)
		out[name] = m
	}
	return out
}

// refused checks a refusal: its code and what its message must say.
func refused(t *testing.T, body map[string]any, isErr bool, code string, says ...string) {
	t.Helper()
	e, _ := body["error"].(map[string]any)
	msg, _ := e["message"].(string)
	if !isErr || e["code"] != code {
		b, _ := json.Marshal(body)
		t.Fatalf("want a %s refusal, got %s", code, b)
	}
	for _, s := range says {
		if !strings.Contains(msg, s) {
			t.Errorf("the refusal does not say %q:\n%s", s, msg)
		}
	}
}

// Specs of the hostile cases. %s is the marker directory.
const (
	hostileEvaluate = `version: 1
contracts:
  R: {ok: boolean}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${leak.output}", contract: R}
    steps:
      - id: leak
        evaluate:
          command: "touch %s/evaluate; head -c 64 /etc/passwd >&2; echo '{\"ok\": true}'"
          timeout_ms: %d
        out: R
`
	hostileFanout = `version: 1
contracts:
  R: {v: string}
flows:
  entry: main
  main:
    input: {items: "string[]"}
    output: {from: "${fan.output[0]}", contract: R}
    steps:
      - id: fan
        fanout:
          over: "${input.items}"
          concurrency: 3
          isolation: %s
          require: all
          merge: sequential%s%s
          steps:
            - do: "Work on ${item}"%s
              out: R
`
	hostileEnsure = `version: 1
contracts:
  R: {path: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${probe.output}", contract: R}
    steps:
      - id: probe
        do: "Name a file"
        out: R
        ensure:
          - %s
`
)

func fanoutSpec(isolation, dispatch, preMerge, agent string) string {
	if dispatch != "" {
		dispatch = "\n          dispatch: " + dispatch
	}
	if preMerge != "" {
		preMerge = "\n          pre_merge: [" + strconv.Quote(preMerge) + "]"
	}
	if agent != "" {
		agent = "\n              agent: " + agent
	}
	return fmt.Sprintf(hostileFanout, isolation, dispatch, preMerge, agent)
}

func plan(c *rawClient, spec string, extra map[string]any) (map[string]any, bool) {
	input := map[string]any{}
	if strings.Contains(spec, "${input.items}") {
		input["items"] = []any{"a", "b", "c"}
	}
	args := map[string]any{"spec": spec, "input": input}
	for k, v := range extra {
		args[k] = v
	}
	return c.tool("stratum_plan", args)
}

// TestHostileSpecs: every "tried as" case of docs/policy.md against a
// server started with no policy flag.
func TestHostileSpecs(t *testing.T) {
	h := newHostile(t)
	c := h.start(serverOpts{})
	cases := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"evaluate runs a shell during plan", func(t *testing.T) {
			body, isErr := plan(c, fmt.Sprintf(hostileEvaluate, h.marks, 1000), nil)
			refused(t, body, isErr, "effect_not_allowed", `step "leak" of flow "main" runs the command`,
				"stratum mcp runs no commands", "--allow-commands", "nothing was planned")
			if b, _ := json.Marshal(body); strings.Contains(string(b), "root:") {
				t.Fatalf("the answer carries /etc/passwd: %s", b)
			}
		}},
		{"evaluate with an unbounded timeout", func(t *testing.T) {
			body, isErr := plan(c, fmt.Sprintf(hostileEvaluate, h.marks, 86400000), nil)
			refused(t, body, isErr, "effect_not_allowed", "--allow-commands")
		}},
		{"worktree fanout: claude per item, then pre_merge with sh -lc", func(t *testing.T) {
			body, isErr := plan(c, fanoutSpec("worktree", "", "touch "+h.marks+"/pre_merge", "claude"), nil)
			refused(t, body, isErr, "effect_not_allowed", `starts the claude agent (workspace-write)`, "--allow-agents",
				`dispatch: consumer`, `runs the command "touch `+h.marks+`/pre_merge"`, "--allow-commands")
		}},
		{"plain fanout without dispatch: one claude -p per item", func(t *testing.T) {
			body, isErr := plan(c, fanoutSpec("none", "", "", ""), nil)
			refused(t, body, isErr, "effect_not_allowed", `step "fan" of flow "main" starts the claude agent (read-only)`,
				"--allow-agents", `write "dispatch: consumer" on the fanout`)
		}},
		{"codex fanout", func(t *testing.T) {
			body, isErr := plan(c, fanoutSpec("none", "engine", "", "codex"), nil)
			refused(t, body, isErr, "effect_not_allowed", "starts the codex agent", "--allow-agents")
		}},
		{"the same fanout handed to the client", func(t *testing.T) {
			body, isErr := plan(c, fanoutSpec("none", "consumer", "", ""), nil)
			if isErr || body["status"] != "ready" {
				t.Fatalf("a consumer fanout is refused: %v", body)
			}
		}},
		{"workspaceRoot /: the file_contains oracle", func(t *testing.T) {
			body, isErr := plan(c, fmt.Sprintf(hostileEnsure, `expr: "file_contains(result.path, 's3cr3t')"`), map[string]any{"workspaceRoot": "/"})
			refused(t, body, isErr, "invalid_input", `"/" is the filesystem root`, h.ws, "--allow-root DIR")
		}},
		{"workspaceRoot ..", func(t *testing.T) {
			body, isErr := plan(c, fmt.Sprintf(hostileEnsure, `expr: "file_exists(result.path)"`), map[string]any{"workspaceRoot": ".."})
			refused(t, body, isErr, "invalid_input", strconv.Quote(h.base)+" is outside the allowed roots", h.ws, "--allow-root DIR")
		}},
		{"workspaceRoot outside", func(t *testing.T) {
			body, isErr := plan(c, fmt.Sprintf(hostileEnsure, `file_exists: "secret"`), map[string]any{"workspaceRoot": h.outside})
			refused(t, body, isErr, "invalid_input", "is outside the allowed roots", "--allow-root DIR")
		}},
		{"workspaceRoot a missing path", func(t *testing.T) {
			body, isErr := plan(c, fmt.Sprintf(hostileEnsure, `file_exists: "x"`), map[string]any{"workspaceRoot": filepath.Join(h.ws, "nothing")})
			refused(t, body, isErr, "invalid_input", "does not exist")
		}},
		{"workspaceRoot a regular file", func(t *testing.T) {
			body, isErr := plan(c, fmt.Sprintf(hostileEnsure, `file_exists: "x"`), map[string]any{"workspaceRoot": filepath.Join(h.ws, "notes.txt")})
			refused(t, body, isErr, "invalid_input", "is not a directory")
		}},
		{"workspaceRoot a symlink to outside", func(t *testing.T) {
			body, isErr := plan(c, fmt.Sprintf(hostileEnsure, `file_exists: "secret"`), map[string]any{"workspaceRoot": filepath.Join(h.ws, "escape")})
			refused(t, body, isErr, "invalid_input", "resolves to "+h.outside)
		}},
		{"guard workspace_root /", func(t *testing.T) {
			for _, root := range []string{"/", h.outside} {
				body, isErr := c.tool("stratum_guard_register", map[string]any{"resource_id": "t:1", "initial": "a", "graph": map[string]any{"a": []any{"b"}},
					"terminal": []any{"b"}, "edge_predicates": map[string]any{}, "workspace_root": root})
				refused(t, body, isErr, "invalid_workspace_root", "outside the allowed roots", h.ws, "--allow-root DIR")
			}
		}},
		{"a 10 MB output", func(t *testing.T) {
			body, isErr := plan(c, fmt.Sprintf(hostileEnsure, `expr: "result.path != ''"`), nil)
			if isErr {
				t.Fatalf("plan: %v", body)
			}
			ready, _ := body["ready"].([]any)
			e, _ := ready[0].(map[string]any)
			res := map[string]any{"output": map[string]any{"path": strings.Repeat("x", 10<<20)}}
			done, isErr := c.tool("stratum_step_done", map[string]any{"runId": body["runId"], "stepId": "probe", "dispatchToken": e["dispatchToken"], "result": res})
			refused(t, done, isErr, "invalid_input", "over the limit of 1048576 bytes for a step output", "the dispatch token is still valid")
			// usage.usd null passes the schema and the engine alike.
			res = map[string]any{"output": map[string]any{"path": "notes.txt"}, "usage": map[string]any{"usd": nil, "tokens": 3}}
			done, isErr = c.tool("stratum_step_done", map[string]any{"runId": body["runId"], "stepId": "probe", "dispatchToken": e["dispatchToken"], "result": res})
			if isErr || done["status"] != "completed" {
				t.Fatalf("a small report with usd null: %v", done)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t)
			c.tools() // the server still answers
		})
	}
	// Zero effects the person did not allow, over the whole suite.
	if m := markers(t, h.marks); len(m) > 0 {
		t.Fatalf("effects happened that the person did not allow: %v", m)
	}
	if strings.Contains(c.stderr.String(), "panic") {
		t.Fatalf("the server panicked:\n%s", c.stderr.String())
	}
}

// annotation reads one hint of a listed tool.
func annotation(t *testing.T, tl map[string]any, hint string) bool {
	t.Helper()
	a, _ := tl["annotations"].(map[string]any)
	v, ok := a[hint].(bool)
	if !ok {
		t.Fatalf("%s: no %s in %v", tl["name"], hint, a)
	}
	return v
}

// TestHostilePolicyMatrix: each effect, forbidden and allowed, under
// `stratum mcp`; a refusal names the flag or the policy-file line, an
// allowed effect does happen (its marker), and tools/list's annotations
// follow the policy the server was started with.
func TestHostilePolicyMatrix(t *testing.T) {
	h := newHostile(t)
	policyFile := filepath.Join(h.base, "policy.yaml")
	h.write(policyFile, "version: 1\nagents: [codex]\nfile_reads: false\njudges: false\n", 0o644)
	judgeEnv := []string{"STRATUM_JUDGE_COMMAND=" + filepath.Join(h.bin, "judge")}
	evaluate := fmt.Sprintf(hostileEvaluate, "$STRATUM_TEST_MARKS", 5000)
	judged := fmt.Sprintf(hostileEnsure, `judged: {statement: "the path is fine", stakes: cheap}`)
	fileRead := fmt.Sprintf(hostileEnsure, `expr: "file_exists(result.path)"`)
	cases := []struct {
		name  string
		args  []string
		env   []string
		spec  string
		allow bool
		says  []string // what the refusal says
		// marker is what an allowed effect leaves ("" none to check).
		marker string
		// report answers the first ready step (file read, judge).
		report bool
	}{
		{"command forbidden", nil, nil, evaluate, false, []string{"--allow-commands"}, "", false},
		{"command allowed", []string{"--allow-commands"}, nil, evaluate, true, nil, "evaluate", false},
		{"command over the time limit", []string{"--allow-commands", "--max-command-timeout", "1s"}, nil, evaluate, false,
			[]string{"above the longest time limit stratum mcp allows (1s, --max-command-timeout)", "--max-command-timeout 5s"}, "", false},
		{"claude forbidden", nil, nil, fanoutSpec("none", "", "", "claude"), false, []string{"--allow-agents", "dispatch: consumer"}, "", false},
		{"claude allowed", []string{"--allow-agents"}, nil, fanoutSpec("none", "", "", "claude"), true, nil, "claude", false},
		{"claude not in the file's list", []string{"--policy", policyFile}, nil, fanoutSpec("none", "", "", "claude"), false,
			[]string{"allows only the agents codex (agents at line 2), not claude", "add claude to that list"}, "", false},
		{"codex in the file's list", []string{"--policy", policyFile}, nil, fanoutSpec("none", "", "", "codex"), true, nil, "codex", false},
		{"file read allowed", nil, nil, fileRead, true, nil, "", true},
		{"file read forbidden by the file", []string{"--policy", policyFile}, nil, fileRead, false,
			[]string{"says file_reads: false (line 3)", "set file_reads: true at line 3 of " + policyFile}, "", false},
		{"judge allowed", nil, judgeEnv, judged, true, nil, "judge", true},
		{"judge forbidden by the file", []string{"--policy", policyFile}, judgeEnv, judged, false,
			[]string{"says judges: false (line 4)"}, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			marks := h.marks
			if tc.allow {
				marks = t.TempDir() // allowed effects leave their markers here
			}
			c := h.start(serverOpts{args: tc.args, env: tc.env, marks: marks})
			body, isErr := plan(c, tc.spec, nil)
			if !tc.allow {
				refused(t, body, isErr, "effect_not_allowed", tc.says...)
				c.tools()
				return
			}
			if isErr {
				t.Fatalf("refused: %v", body)
			}
			if tc.report {
				ready, _ := body["ready"].([]any)
				e, _ := ready[0].(map[string]any)
				done, isErr := c.tool("stratum_step_done", map[string]any{"runId": body["runId"], "stepId": "probe", "dispatchToken": e["dispatchToken"],
					"result": map[string]any{"output": map[string]any{"path": "notes.txt"}}})
				if isErr || done["status"] != "completed" {
					t.Fatalf("report: %v", done)
				}
			}
			if tc.marker != "" {
				// Engine fanout items run after the plan answers: wait for
				// the marker (bounded), then the server must still answer.
				for i := 0; i < 600 && !slicesContains(markers(t, marks), tc.marker); i++ {
					time.Sleep(50 * time.Millisecond)
				}
				if !slicesContains(markers(t, marks), tc.marker) {
					t.Fatalf("the allowed effect did not happen (markers %v)\nstderr:\n%s", markers(t, marks), c.stderr.String())
				}
			}
			c.tools()
		})
	}
	if m := markers(t, h.marks); len(m) > 0 {
		t.Fatalf("effects happened that the person did not allow: %v", m)
	}

	// Annotations as listed follow the policy.
	advancing := []string{"stratum_plan", "stratum_step_done", "stratum_gate_resolve", "stratum_resume", "stratum_revert"}
	for _, args := range [][]string{nil, {"--allow-commands"}, {"--allow-agents"}} {
		tools := h.start(serverOpts{args: args}).tools()
		acts := len(args) > 0
		for _, name := range advancing {
			tl := tools[name]
			if tl == nil {
				t.Fatalf("%s not listed", name)
			}
			if annotation(t, tl, "openWorldHint") != acts ||
				acts && (!annotation(t, tl, "destructiveHint") || annotation(t, tl, "readOnlyHint") || annotation(t, tl, "idempotentHint")) {
				t.Errorf("%v: %s annotated %v", args, name, tl["annotations"])
			}
		}
		if v := tools["stratum_validate"]; !annotation(t, v, "readOnlyHint") || annotation(t, v, "openWorldHint") {
			t.Errorf("%v: stratum_validate annotated %v", args, v["annotations"])
		}
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestHostileClientRoots: a workspace root inside a root the client
// declared is accepted; a client that declares roots and never answers
// costs one short wait, and the server keeps serving.
func TestHostileClientRoots(t *testing.T) {
	h := newHostile(t)
	spec := fmt.Sprintf(hostileEnsure, `expr: "file_exists(result.path)"`)
	c := h.start(serverOpts{declareRoots: true, roots: []string{h.outside, "/"}})
	if body, isErr := plan(c, spec, map[string]any{"workspaceRoot": h.outside}); isErr {
		t.Fatalf("a root the client declared is refused: %v", body)
	}
	body, isErr := plan(c, spec, map[string]any{"workspaceRoot": h.base})
	refused(t, body, isErr, "invalid_input", "is outside the allowed roots", h.outside, "the MCP client's roots")
	// A client root of / is not a jail: the person's roots still apply.
	body, isErr = plan(c, spec, map[string]any{"workspaceRoot": "/"})
	refused(t, body, isErr, "invalid_input", "the filesystem root")
	if c.askedCount() != 1 {
		t.Errorf("the client was asked for its roots %d times, want once per session", c.askedCount())
	}

	silent := h.start(serverOpts{declareRoots: true, ignoreRoots: true})
	if body, isErr := plan(silent, spec, nil); isErr {
		t.Fatalf("a client that does not answer roots/list cannot plan in the server's directory: %v", body)
	}
	body, isErr = plan(silent, spec, map[string]any{"workspaceRoot": h.outside})
	refused(t, body, isErr, "invalid_input", "is outside the allowed roots")
	silent.tools()

	// From protocol 2026-07-28 on a server may not ask (roots are
	// deprecated): the person's roots apply.
	newer := h.start(serverOpts{declareRoots: true, roots: []string{h.outside}, protocol: "2026-07-28"})
	body, isErr = plan(newer, spec, map[string]any{"workspaceRoot": h.outside})
	refused(t, body, isErr, "invalid_input", "is outside the allowed roots")
	if body, isErr := plan(newer, spec, nil); isErr {
		t.Fatalf("plan in the server's directory under 2026-07-28: %v", body)
	}
	if newer.askedCount() != 0 {
		t.Errorf("asked for roots under 2026-07-28")
	}

	// --policy with client_roots: false ignores the client's roots.
	pf := filepath.Join(h.base, "noclient.yaml")
	h.write(pf, "version: 1\nclient_roots: false\n", 0o644)
	strict := h.start(serverOpts{args: []string{"--policy", pf}, declareRoots: true, roots: []string{h.outside}})
	body, isErr = plan(strict, spec, map[string]any{"workspaceRoot": h.outside})
	refused(t, body, isErr, "invalid_input", "is outside the allowed roots")
	if strict.askedCount() != 0 {
		t.Errorf("client_roots: false, yet the client was asked %d times", strict.askedCount())
	}
	// --allow-root names another root.
	named := h.start(serverOpts{args: []string{"--allow-root", h.outside}})
	if body, isErr := plan(named, spec, map[string]any{"workspaceRoot": h.outside}); isErr {
		t.Fatalf("--allow-root: %v", body)
	}
}

func (c *rawClient) askedCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.asked
}
