package mcp

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/guard"
	"github.com/stratum-go/stratum/store"
)

// fuzzedTools are the tools FuzzDirectCallsAnswerAsTheSDK may call: each
// answers the same twice over a server without runs (an error, mostly),
// so that two answers to one call can be compared. A call that could
// start something (a run, an agent) would answer with ids of its own.
var fuzzedTools = map[string]bool{
	"stratum_validate": true, "stratum_gates": true, "stratum_audit": true, "stratum_step_done": true,
	"stratum_flow_poll": true, "stratum_gate_resolve": true, "stratum_guard_history": true,
}

// FuzzDirectCallsAnswerAsTheSDK sends one tools/call, its params fuzzed,
// through the SDK's dispatch and with direct calls, in a session of each
// kind (before 2026-07-28, of it, and of a version the server does not
// know): the two answers are always the same bytes.
func FuzzDirectCallsAnswerAsTheSDK(f *testing.F) {
	const (
		version = `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`
		caps    = `"io.modelcontextprotocol/clientCapabilities":{}`
	)
	for _, p := range []string{
		`{"name":"stratum_validate","arguments":{"spec":"version: 1"}}`,
		`{"name":"stratum_gates","arguments":{}}`,
		`{"name":"stratum_gates","arguments":{},"_meta":{"claudecode/toolUseId":"toolu_01"}}`,
		`{"name":"stratum_gates","arguments":{},"_meta":{` + version + `,` + caps + `}}`,
		`{"name":"stratum_gates","arguments":{},"_meta":{` + version + `,` + caps + `,"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}}`,
		`{"name":"stratum_step_done","arguments":{"runId":"00000000-0000-4000-8000-000000000000","stepId":"s","dispatchToken":"x","result":{"output":{}}}}`,
		`{"name":"stratum_audit","arguments":{"runId":"nope"},"_meta":{"progressToken":1}}`,
		`{"name":"no_such_tool","arguments":{}}`,
		`{"name":"stratum_gates","arguments":[]}`,
		`null`,
	} {
		for _, session := range []byte{0, 1, 2} {
			f.Add(session, p)
		}
	}
	versions := []string{"2025-06-18", "2026-07-28", "2099-01-01"}
	f.Fuzz(func(t *testing.T, session byte, params string) {
		if !json.Valid([]byte(params)) || strings.ContainsAny(params, "\n\r") {
			t.Skip("not one JSON line")
		}
		var named struct {
			Name any `json:"name"`
		}
		if json.Unmarshal([]byte(params), &named) == nil {
			if name, ok := named.Name.(string); ok && strings.HasPrefix(name, "stratum_") && !fuzzedTools[name] {
				t.Skip("a tool whose answers differ from call to call")
			}
		}
		eng := engine.New(store.NewMemory(), engine.Options{Workspace: engine.WorkspacePolicy{Default: t.TempDir()}})
		t.Cleanup(eng.Close)
		g, err := guard.New(guard.Options{Root: filepath.Join(t.TempDir(), "guards"), Getenv: func(string) string { return "" }})
		if err != nil {
			t.Fatal(err)
		}
		srv, err := buildServer(Deps{Engine: eng, Guard: g, Version: "test"}, true)
		if err != nil {
			t.Fatal(err)
		}
		viaSDK, direct := startStream(t, srv, false), startStream(t, srv, true)
		v := versions[int(session)%len(versions)]
		viaSDK.initializeAs(v)
		direct.initializeAs(v)
		frame := toolCall(1, params)
		if a, b := viaSDK.roundTrip(frame), direct.roundTrip(frame); a != b {
			t.Errorf("protocol %s, params %s: the answers differ\nSDK:    %s\ndirect: %s", v, params, a, b)
		}
	})
}
