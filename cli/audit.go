package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/stratum-go/stratum/internal/eventtext"
	"github.com/stratum-go/stratum/store"
)

// auditCmd is "stratum audit RUN [--verify]": print a run's trace, and
// re-check its hash chain.
type auditCmd struct {
	verify bool
	json   bool
}

func (*auditCmd) Name() string     { return "audit" }
func (*auditCmd) Synopsis() string { return "[--verify] [--json] RUN" }
func (*auditCmd) Short() string    { return "print a run's trace; --verify re-checks its hash chain" }
func (*auditCmd) Long() string {
	return `Audit prints the trace of run RUN: its status, then every event of its
append-only log, one per line (sequence number, time, what happened), then
its output or failure. --json prints the full audit document instead (the
answer of the MCP tool stratum_audit: every step's state with its
attempts, every event, spend, output, carry).

--verify first re-checks the whole log: each event's hash over its
content and its predecessor's hash, from the first event to the head the
run's state records. An intact log ends the trace with "chain: intact";
any break (an edited, removed or reordered event, a state that does not
match its log) prints where it is and exits 1 without printing the trace.
With --json, --verify prints {runId, intact, events, head, tail?, problem?}.

Exit status: 0 printed (and intact), 1 not found, corrupt or broken,
2 usage.`
}

func (c *auditCmd) SetFlags(fs *flag.FlagSet) {
	fs.BoolVar(&c.verify, "verify", false, "re-check the event chain; exit 1 on any break")
	fs.BoolVar(&c.json, "json", false, "print the full audit document as JSON (with --verify: the verification result)")
}

type verifyDoc struct {
	RunID   string      `json:"runId"`
	Intact  bool        `json:"intact"`
	Events  int64       `json:"events"`
	Head    *store.Head `json:"head,omitempty"`
	Tail    *store.Tail `json:"tail,omitempty"`
	Problem *problem    `json:"problem,omitempty"`
}

type problem struct {
	Part    string `json:"part"`
	Seq     int64  `json:"seq,omitempty"`
	Offset  int64  `json:"offset"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

func (c *auditCmd) Run(ctx context.Context, env *Env, args []string) error {
	if len(args) != 1 {
		return usagef("expected one run id, got %d arguments", len(args))
	}
	runID := args[0]
	if err := checkRunID(env, runID); err != nil {
		return err
	}
	sys, err := openSystem(env, systemConfig{})
	if err != nil {
		return fail(env, "INVALID", err.Error())
	}
	defer sys.Close()
	e := sys.engine
	st := sys.store
	var chain string
	if c.verify {
		rep, err := st.Verify(ctx, runID)
		if isNotFound(err) {
			return fail(env, "NOT_FOUND", fmt.Sprintf("Flow '%s' not found", runID))
		}
		var ce *store.CorruptError
		if errors.As(err, &ce) {
			if c.json {
				_ = writeJSON(env.Stdout, verifyDoc{RunID: runID, Problem: &problem{Part: ce.Part, Seq: ce.Seq, Offset: ce.Offset, Reason: ce.Reason, Message: ce.Error()}})
			} else {
				fmt.Fprintf(env.Stdout, "chain: BROKEN: %s\n", ce.Error())
			}
			fmt.Fprintf(env.Stderr, "stratum audit: run %s fails verification: %s\n", runID, ce.Reason)
			return exitCode(ExitFailure)
		}
		if err != nil {
			return fail(env, "INVALID", err.Error())
		}
		if c.json {
			doc := verifyDoc{RunID: runID, Intact: true, Events: rep.Events, Head: &rep.Head}
			if rep.Tail.Bytes > 0 {
				doc.Tail = &rep.Tail
			}
			return writeJSON(env.Stdout, doc)
		}
		chain = fmt.Sprintf("chain: intact (%s, head seq %d, hash %s)", plural(int(rep.Events), "event"), rep.Head.Seq, rep.Head.Hash)
		if rep.Tail.Bytes > 0 {
			chain += fmt.Sprintf("\nunacknowledged tail: %d bytes (%d events) after the head, written by an interrupted update; the next update removes it", rep.Tail.Bytes, rep.Tail.Events)
		}
	}
	a, err := e.Audit(ctx, runID)
	if isNotFound(err) {
		return fail(env, "NOT_FOUND", fmt.Sprintf("Flow '%s' not found", runID))
	}
	if err != nil {
		return fail(env, engineCode(err), err.Error())
	}
	if c.json {
		return writeJSON(env.Stdout, a)
	}
	w := env.Stdout
	fmt.Fprintf(w, "run %s (flow %s): %s\n", a.RunID, a.Flow, a.Status)
	fmt.Fprintf(w, "created %s, updated %s, revision %s\n", a.CreatedAt.UTC().Format(time.RFC3339), a.UpdatedAt.UTC().Format(time.RFC3339), a.RevisionDigest)
	for _, ev := range a.Events {
		desc := eventtext.Describe(ev)
		if desc == "" {
			desc = string(ev.Type) + " " + string(ev.Detail)
			if ev.StepID != "" {
				desc = ev.StepID + ": " + desc
			}
		}
		fmt.Fprintf(w, "%5d  %s  %s\n", ev.Seq, ev.At.UTC().Format("2006-01-02T15:04:05.000Z"), desc)
	}
	switch {
	case a.Output.Present:
		b, _ := json.Marshal(a.Output)
		fmt.Fprintf(w, "output: %s\n", b)
	case a.Failure != nil:
		fmt.Fprintf(w, "failure: %s\n", a.Failure.Reason)
	}
	if l := a.Ledger.Spent; !l.IsZero() {
		b, _ := json.Marshal(l)
		fmt.Fprintf(w, "spent: %s\n", b)
	}
	if chain != "" {
		fmt.Fprintln(w, chain)
	}
	return nil
}
