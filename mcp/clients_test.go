package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRealClients checks what the real hosts show their model of this
// server: Codex (@openai/codex) and Claude Code (@anthropic-ai/claude-code),
// run offline against the built binary. Each host is pointed at a local
// stand-in for its model API that records the first model request and
// refuses it: that request is exactly what the model would have been
// given (the tools with their descriptions and parameter schemas, the
// server instructions). Each host is skipped, with one line, when its
// command is not on PATH (or named by STRATUM_TEST_CODEX /
// STRATUM_TEST_CLAUDE); install them with
//
//	npm install --prefix /tmp/clients @openai/codex @anthropic-ai/claude-code
//	PATH=/tmp/clients/node_modules/.bin:$PATH go test ./mcp -run TestRealClients -v
func TestRealClients(t *testing.T) {
	t.Run("codex", testCodex)
	t.Run("claude", testClaude)
}

// hostBinary finds a host's command or skips the test.
func hostBinary(t *testing.T, env, name, pkg string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed (npm install %s, then put it on PATH or set %s): not checking what it shows", name, pkg, env)
	}
	return p
}

// standIn is a local stand-in for a model API: it records the body of
// every POST and answers 400, which ends a host's turn at once.
type standIn struct {
	*httptest.Server
	mu    sync.Mutex
	posts []posted
}

type posted struct {
	path string
	body map[string]any
}

func newStandIn(t *testing.T) *standIn {
	s := &standIn{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			var m map[string]any
			if json.Unmarshal(b, &m) == nil {
				s.mu.Lock()
				s.posts = append(s.posts, posted{r.URL.Path, m})
				s.mu.Unlock()
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"stand-in: no model here"}}`)
	}))
	t.Cleanup(s.Close)
	return s
}

// request returns the first recorded request to a path ending in suffix.
func (s *standIn) request(t *testing.T, suffix string) map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.posts {
		if strings.HasSuffix(p.path, suffix) {
			return p.body
		}
	}
	t.Fatalf("the host sent no request to %s (it sent %d)", suffix, len(s.posts))
	return nil
}

// runHost runs a host command to its end (it fails once the stand-in
// refuses the model request) and returns its combined output.
func runHost(t *testing.T, dir string, env []string, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	out, _ := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s %v did not end: %s", filepath.Base(bin), args, out)
	}
	return string(out)
}

// hostEnv is a minimal environment for a host: PATH (hosts installed by
// npm start through node), a temporary HOME, and the given variables.
func hostEnv(home string, vars ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8"}, vars...)
}

// toolNames are the names of the server's tools, as it lists them.
func toolNames(t *testing.T) []string {
	t.Helper()
	f := newFixture(t)
	s := newServer(f.eng, slog.New(slog.DiscardHandler))
	s.guard = f.guard
	var out []string
	for _, tl := range s.tools() {
		out = append(out, tl.def.Name)
	}
	slices.Sort(out)
	return out
}

// checkModelTools checks the tools a host gave its model: every Stratum
// tool is there, and its parameter schema keeps a type and a description
// for every property. It returns a summary for the log.
func checkModelTools(t *testing.T, host string, got map[string]map[string]any) string {
	t.Helper()
	want := toolNames(t)
	var names []string
	for n := range got {
		names = append(names, n)
	}
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Errorf("%s shows the tools %v, want %v", host, names, want)
	}
	for name, params := range got {
		for _, p := range untypedProperties(params, "") {
			t.Errorf("%s shows %s with %s", host, name, p)
		}
	}
	out := "?"
	if sd := got["stratum_step_done"]; sd != nil {
		b, _ := json.Marshal(sd["properties"].(map[string]any)["result"].(map[string]any)["properties"].(map[string]any)["output"])
		out = string(b)
	}
	return fmt.Sprintf("%d Stratum tools, every property typed and described; stratum_step_done result.output: %s", len(got), out)
}

func stratumConfigEnv(t *testing.T) (bin, state string) {
	bin, _ = buildBinaries(t)
	return bin, t.TempDir()
}

func testCodex(t *testing.T) {
	codex := hostBinary(t, "STRATUM_TEST_CODEX", "codex", "@openai/codex")
	stratum, state := stratumConfigEnv(t)
	api := newStandIn(t)
	home := t.TempDir()
	codexHome := filepath.Join(home, ".codex")
	work := t.TempDir()
	if err := os.MkdirAll(codexHome, 0o755); err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`model = "gpt-5"
model_provider = "standin"

[model_providers.standin]
name = "standin"
base_url = "%s/v1"
wire_api = "responses"
env_key = "STANDIN_KEY"
request_max_retries = 0
stream_max_retries = 0

[mcp_servers.stratum]
command = %q
args = ["mcp"]
env = { STRATUM_HOME = %q }
`, api.URL, stratum, state)
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	env := hostEnv(home, "CODEX_HOME="+codexHome, "STANDIN_KEY=standin")

	// What Codex holds of the server: its app server's MCP status.
	status := codexMCPStatus(t, codex, work, env)
	if status["name"] != "stratum" {
		t.Fatalf("codex app-server lists no stratum server: %v", status)
	}
	tools, _ := status["tools"].(map[string]any)
	resources, _ := status["resources"].([]any)
	var uris []string
	for _, r := range resources {
		u, _ := r.(map[string]any)["uri"].(string)
		uris = append(uris, u)
	}
	if !slices.Contains(uris, LanguageURI) {
		t.Errorf("codex lists the resources %v, want %s", uris, LanguageURI)
	}
	t.Logf("codex app-server mcpServerStatus/list: %d tools, resources %v", len(tools), uris)

	// What Codex gives its model: the first model request of a turn.
	out := runHost(t, work, env, codex, "exec", "--skip-git-repo-check", "hello")
	req := api.request(t, "/responses")
	var ns map[string]any
	var modelTools []string
	for _, tl := range req["tools"].([]any) {
		m := tl.(map[string]any)
		name, _ := m["name"].(string)
		modelTools = append(modelTools, name)
		if name == "mcp__stratum" {
			ns = m
		}
	}
	if ns == nil {
		t.Fatalf("codex gave its model no mcp__stratum tools (it gave %v); codex said:\n%s", modelTools, out)
	}
	got := map[string]map[string]any{}
	for _, tl := range ns["tools"].([]any) {
		m := tl.(map[string]any)
		params, _ := m["parameters"].(map[string]any)
		got[m["name"].(string)] = params
	}
	summary := checkModelTools(t, "codex", got)
	desc, _ := ns["description"].(string)
	if strings.TrimSpace(desc) != strings.TrimSpace(Instructions()) {
		t.Errorf("codex does not give its model the instructions whole as the namespace description:\n%s", desc)
	}
	for _, want := range []string{"list_mcp_resources", "read_mcp_resource"} {
		if !slices.Contains(modelTools, want) {
			t.Errorf("codex does not give its model %s (it gave %v)", want, modelTools)
		}
	}
	t.Logf("codex gives its model: namespace mcp__stratum whose description is the instructions (%d bytes, whole); %s; and list_mcp_resources/read_mcp_resource for %s", len(desc), summary, LanguageURI)
}

// codexMCPStatus asks codex app-server (JSON-RPC over stdio) for its MCP
// servers' status and returns the stratum entry.
func codexMCPStatus(t *testing.T, codex, dir string, env []string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, codex, "app-server")
	cmd.Dir = dir
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	send := func(m map[string]any) {
		b, _ := json.Marshal(m)
		if _, err := stdin.Write(append(b, '\n')); err != nil {
			t.Fatalf("codex app-server: %v", err)
		}
	}
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 64<<20)
	await := func(id int) map[string]any {
		for lines.Scan() {
			var m map[string]any
			if json.Unmarshal(lines.Bytes(), &m) == nil && m["id"] == float64(id) {
				if m["error"] != nil {
					t.Fatalf("codex app-server: %v", m["error"])
				}
				return m["result"].(map[string]any)
			}
		}
		t.Fatalf("codex app-server ended before answering %d: %v", id, lines.Err())
		return nil
	}
	send(map[string]any{"id": 1, "method": "initialize", "params": map[string]any{"clientInfo": map[string]any{"name": "stratum-test", "version": "0"}}})
	await(1)
	send(map[string]any{"method": "initialized"})
	send(map[string]any{"id": 2, "method": "mcpServerStatus/list", "params": map[string]any{}})
	for _, s := range await(2)["data"].([]any) {
		if m := s.(map[string]any); m["name"] == "stratum" {
			return m
		}
	}
	return nil
}

func testClaude(t *testing.T) {
	claude := hostBinary(t, "STRATUM_TEST_CLAUDE", "claude", "@anthropic-ai/claude-code")
	stratum, state := stratumConfigEnv(t)
	api := newStandIn(t)
	home, work := t.TempDir(), t.TempDir()
	env := hostEnv(home, "ANTHROPIC_BASE_URL="+api.URL, "ANTHROPIC_API_KEY=sk-ant-standin",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1")

	// claude mcp add / list: the server starts and answers.
	runHost(t, work, env, claude, "mcp", "add", "-s", "user", "stratum", "-e", "STRATUM_HOME="+state, "--", stratum, "mcp")
	list := runHost(t, work, env, claude, "mcp", "list")
	if !strings.Contains(list, "stratum") || !strings.Contains(list, "Connected") {
		t.Errorf("claude mcp list does not show stratum connected:\n%s", list)
	}

	// What Claude Code gives its model.
	out := runHost(t, work, env, claude, "-p", "hello")
	req := api.request(t, "/messages")
	got := map[string]map[string]any{}
	var builtins []string
	for _, tl := range req["tools"].([]any) {
		m := tl.(map[string]any)
		name, _ := m["name"].(string)
		if short, ok := strings.CutPrefix(name, "mcp__stratum__"); ok {
			got[short], _ = m["input_schema"].(map[string]any)
			if d, _ := m["description"].(string); strings.Contains(d, "[truncated]") {
				t.Errorf("claude truncates the description of %s", short)
			}
			continue
		}
		builtins = append(builtins, name)
	}
	if len(got) == 0 {
		t.Fatalf("claude gave its model no mcp__stratum__ tools; claude said:\n%s", out)
	}
	summary := checkModelTools(t, "claude", got)
	// The request as JSON text holds the instructions JSON-escaped.
	text, _ := json.Marshal(req)
	instr, _ := json.Marshal(strings.TrimSpace(Instructions()))
	if !strings.Contains(string(text), strings.Trim(string(instr), `"`)) {
		t.Errorf("claude does not give its model the whole instructions")
	}
	for _, want := range []string{"ListMcpResourcesTool", "ReadMcpResourceTool"} {
		if !slices.Contains(builtins, want) {
			t.Errorf("claude does not give its model %s", want)
		}
	}
	t.Logf("claude mcp list: %s", strings.TrimSpace(lastLine(list)))
	t.Logf("claude gives its model: the instructions whole (in its system prompt, under \"## stratum\"); %s; and ListMcpResourcesTool/ReadMcpResourceTool for %s", summary, LanguageURI)

	// The prompt is a slash command; what follows it reaches the model.
	api.mu.Lock()
	api.posts = nil
	api.mu.Unlock()
	runHost(t, work, env, claude, "-p", "/mcp__stratum__"+WriteFlowPrompt+" review the files of my change")
	req = api.request(t, "/messages")
	text, _ = json.Marshal(req)
	if !strings.Contains(string(text), "review the files of my change") || !strings.Contains(string(text), "# Writing Stratum flows") {
		t.Errorf("the /mcp__stratum__%s command does not give the model the task and the reference", WriteFlowPrompt)
	}
	t.Logf("claude: /mcp__stratum__%s TASK gives the model the prompt (the reference included) and the whole command line", WriteFlowPrompt)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
