package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stratum-go/stratum/agent"
	"github.com/stratum-go/stratum/expr"
)

// When started with QUICKSTART_AGENT_CHILD=1 the test binary is the agent
// itself, so the tests drive the real main through the Command connector
// as a real child process.
func TestMain(m *testing.M) {
	if os.Getenv("QUICKSTART_AGENT_CHILD") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func connector() *agent.Command {
	return &agent.Command{Argv: []string{os.Args[0]}, Env: append(os.Environ(), "QUICKSTART_AGENT_CHILD=1")}
}

func draftContract() *agent.Contract {
	return &agent.Contract{Name: "Draft", Fields: []agent.Field{{Name: "text", Type: "string"}, {Name: "confidence", Type: "number"}}}
}

func TestQuickstartAgent(t *testing.T) {
	rich := &agent.Contract{
		Name: "Review",
		Fields: []agent.Field{
			{Name: "verdict", Type: "approve|reject"},
			{Name: "score", Type: "number"},
			{Name: "count", Type: "integer"},
			{Name: "ok", Type: "boolean"},
			{Name: "labels", Type: "(bug|docs)[]"},
			{Name: "notes", Type: "string[]?"},
			{Name: "findings", Type: "Finding[]"},
			{Name: "meta", Type: "object"},
			{Name: "extra", Type: "array"},
		},
		Contracts: []agent.Contract{{Name: "Finding", Fields: []agent.Field{{Name: "line", Type: "integer"}, {Name: "msg", Type: "string"}}}},
	}
	tests := []struct {
		name string
		req  agent.Request
		want string
	}{
		{
			name: "draft attempt 1 is wrong on purpose",
			req:  agent.Request{RunID: "r", StepID: "draft", Task: "Draft a tagline for Stratum", Attempt: 1, Contract: draftContract()},
			want: `{"text":"text for: Draft a tagline for Stratum","confidence":0.2}`,
		},
		{
			name: "draft retry is right",
			req: agent.Request{RunID: "r", StepID: "draft", Task: "Draft a tagline for Stratum", Attempt: 2, Contract: draftContract(),
				PreviousFailure: &agent.Failure{Attempt: 1, Reason: "ensure failed: result.confidence >= 0.8"}},
			want: `{"text":"text for: Draft a tagline for Stratum","confidence":0.9}`,
		},
		{
			name: "an iteration sent back improves",
			req: agent.Request{RunID: "r", StepID: "improve", Task: "Improve", Attempt: 2, Contract: &agent.Contract{Fields: []agent.Field{{Name: "quality", Type: "number"}}},
				PreviousFailure: &agent.Failure{Attempt: 1, Reason: `iterate until "result.quality >= 0.95" failed: evaluated to false`}},
			want: `{"quality":0.99}`,
		},
		{
			name: "other steps are right at once",
			req:  agent.Request{RunID: "r", StepID: "review", Task: "Review the draft.\nBe strict.", Attempt: 1, Contract: rich},
			want: `{"verdict":"approve","score":0.9,"count":1,"ok":true,"labels":["bug"],"notes":["notes for: Review the draft."],` +
				`"findings":[{"line":1,"msg":"msg for: Review the draft."}],"meta":{},"extra":["extra item"]}`,
		},
		{
			name: "no contract",
			req:  agent.Request{RunID: "r", StepID: "notes", Task: strings.Repeat("long task ", 10), Attempt: 1},
			want: `"Done: long task long task long task long task long task long task ..."`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := connector().Run(context.Background(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if res.Failure != "" {
				t.Fatalf("failure: %s", res.Failure)
			}
			b, err := expr.EncodeJSON(res.Output)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("output\n got %s\nwant %s", b, tt.want)
			}
		})
	}
}

func TestQuickstartAgentBadInput(t *testing.T) {
	var stdout, stderr strings.Builder
	err := run(strings.NewReader("not json"), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "not the expected JSON object") || stdout.Len() != 0 {
		t.Errorf("err %v stdout %q", err, stdout.String())
	}
}

func TestQuickstartAgentReportsRetry(t *testing.T) {
	var stdout, stderr strings.Builder
	in := `{"runId":"r","stepId":"draft","task":"t","agent":"claude","attempt":2,"contract":null,"previousFailure":{"attempt":1,"reason":"too vague"}}`
	if err := run(strings.NewReader(in), &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if stderr.String() != "quickstart-agent: step draft, attempt 2; attempt 1 failed: too vague\n" || stdout.String() != "\"Done: t\"\n" {
		t.Errorf("stderr %q stdout %q", stderr.String(), stdout.String())
	}
}
