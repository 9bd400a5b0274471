package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/store"
)

// auditCmd is "stratum audit RUN [--verify]": print a run's trace, and
// re-check its hash chain.
type auditCmd struct {
	verify bool
	json   bool
	head   headFlag
}

// headFlag is --head: alone it asks for the run's head; with a hash
// ("--head HASH" or "--head=HASH") it is the anchor --verify checks.
type headFlag struct {
	set  bool
	hash string
}

func (h *headFlag) String() string   { return h.hash }
func (h *headFlag) IsBoolFlag() bool { return true }

// AcceptsValue takes the next argument only when it is a head hash (64
// lowercase hex digits), so that "--head RUN" still names the run.
func (h *headFlag) AcceptsValue(next string) bool { return isHeadHash(next) }

func (h *headFlag) Set(v string) error {
	h.set = true
	switch {
	case v == "true":
		h.hash = ""
	case isHeadHash(v):
		h.hash = v
	default:
		return fmt.Errorf("want a head hash (64 lowercase hex digits, as --head printed it), not %q", v)
	}
	return nil
}

func isHeadHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func (*auditCmd) Name() string     { return "audit" }
func (*auditCmd) Synopsis() string { return "[--verify [--head HASH]] [--json] RUN | --head RUN" }
func (*auditCmd) Short() string    { return "print a run's trace; --verify re-checks its hash chain" }
func (*auditCmd) Long() string {
	return `Audit prints the trace of run RUN: its status, then every event of its
append-only log, one per line (sequence number, time, what happened), then
every step with its status, each of its attempts with the result it
reported or why it was rejected (and, under stratum run in a git
workspace, the diff stat of what it changed: stratum diff prints the
patch), and its output, then the run's output or failure. Values are JSON
as recorded (not HTML-escaped). --json prints the full audit document
instead (the answer of the MCP tool stratum_audit: every step's state with
its attempts, every event, spend, output, carry).

--verify first re-checks the whole log: each event's hash over its
content and its predecessor's hash, from the first event to the head the
run's state records. An intact log ends the trace with "chain: intact";
any break (an edited, removed or reordered event, a state that does not
match its log) prints where it is and exits 1 without printing the trace.
With --json, --verify prints {runId, intact, events, head, anchor?,
headRecord?, tail?, problem?}; a removed head record is said either way.

--head prints the run's current head (its last event's seq and hash) and
nothing else: keep it somewhere the state root's writers cannot reach.
--verify --head HASH then also proves that the chain still passes through
that head ("anchor: seq N, hash H"): a run rewritten consistently by
someone with write access to the state root, or rolled back past the
anchor, fails there (exit 1), which no check inside the state root can
catch (docs/storage.md, "What each check catches").

Exit status: 0 printed (and intact), 1 not found, corrupt or broken,
2 usage.`
}

func (c *auditCmd) SetFlags(fs *flag.FlagSet) {
	fs.BoolVar(&c.verify, "verify", false, "re-check the event chain; exit 1 on any break")
	fs.BoolVar(&c.json, "json", false, "print the full audit document as JSON (with --verify: the verification result)")
	fs.Var(&c.head, "head", "alone: print the run's head; with --verify, `HASH`: a head printed earlier that the chain must still contain")
}

type verifyDoc struct {
	RunID  string      `json:"runId"`
	Intact bool        `json:"intact"`
	Events int64       `json:"events"`
	Head   *store.Head `json:"head,omitempty"`
	Anchor *store.Head `json:"anchor,omitempty"`
	// HeadRecord is the independent head record's state when it is not
	// the run's head: missing or behind (docs/storage.md, "The head record").
	HeadRecord string      `json:"headRecord,omitempty"`
	Tail       *store.Tail `json:"tail,omitempty"`
	// StateFromTemp: the latest state was found in the temporary state
	// file, where a crash that undid its exchange left it.
	StateFromTemp bool     `json:"stateFromTemp,omitempty"`
	Problem       *problem `json:"problem,omitempty"`
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
	switch {
	case c.head.set && c.head.hash == "" && c.verify:
		return usagef("--verify --head needs the HASH a previous --head printed")
	case c.head.hash != "" && !c.verify:
		return usagef("--head HASH is an anchor for --verify: add --verify (or drop HASH to print the head)")
	}
	sys, err := openSystem(env, systemConfig{})
	if err != nil {
		return fail(env, "INVALID", err.Error())
	}
	defer sys.Close()
	e := sys.engine
	st := sys.store
	if c.head.set && !c.verify {
		return printHead(ctx, env, st, runID, c.json)
	}
	var chain string
	if c.verify {
		rep, err := st.Verify(ctx, runID, store.VerifyOptions{Head: c.head.hash})
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
			doc := verifyDoc{RunID: runID, Intact: true, Events: rep.Events, Head: &rep.Head, Anchor: rep.Anchor}
			if rep.HeadRecord != store.HeadRecordMatch {
				doc.HeadRecord = rep.HeadRecord
			}
			if rep.Tail.Bytes > 0 {
				doc.Tail = &rep.Tail
			}
			doc.StateFromTemp = rep.StateFromTemp
			return writeJSON(env.Stdout, doc)
		}
		chain = fmt.Sprintf("chain: intact (%s, head seq %d, hash %s)", plural(int(rep.Events), "event"), rep.Head.Seq, rep.Head.Hash)
		if a := rep.Anchor; a != nil {
			chain += fmt.Sprintf("\nanchor: seq %d, hash %s is on the chain", a.Seq, a.Hash)
		}
		switch rep.HeadRecord {
		case store.HeadRecordMissing:
			chain += "\nhead record: missing: the run's independent head record was removed (or the run predates them); the next write makes a new one, but until then a rollback of the run's files is caught only against an anchor you kept (stratum audit RUN --head)"
		case store.HeadRecordBehind:
			chain += "\nhead record: one write behind the state (an interrupted write); the next read or write completes it"
		}
		if rep.StateFromTemp {
			chain += "\nstate: the latest write's state is in the temporary state file (a crash undid its exchange of the two state files); the next read or write puts it in place"
		}
		if rep.Tail.Bytes > 0 {
			chain += fmt.Sprintf("\nunacknowledged tail: %d bytes (%d events) after the head, written by an interrupted update; the next update keeps it aside and records a store.repair event", rep.Tail.Bytes, rep.Tail.Events)
		}
	}
	defer tightenGC()()
	if c.json {
		err = streamAuditJSON(ctx, env.Stdout, e, runID)
	} else {
		err = streamAuditText(ctx, env.Stdout, e, runID, chain)
	}
	if isNotFound(err) {
		return fail(env, "NOT_FOUND", fmt.Sprintf("Flow '%s' not found", runID))
	}
	if err != nil {
		return fail(env, engineCode(err), err.Error())
	}
	return nil
}

// printHead prints a run's head as the store has it (Load refuses a run
// whose files and head record disagree), for the person to keep as an
// anchor.
func printHead(ctx context.Context, env *Env, st store.Store, runID string, asJSON bool) error {
	snap, err := st.Load(ctx, runID)
	if isNotFound(err) {
		return fail(env, "NOT_FOUND", fmt.Sprintf("Flow '%s' not found", runID))
	}
	var ce *store.CorruptError
	if errors.As(err, &ce) {
		fmt.Fprintf(env.Stderr, "stratum audit: run %s is corrupt: %s\n", runID, ce.Reason)
		return exitCode(ExitFailure)
	}
	if err != nil {
		return fail(env, "INVALID", err.Error())
	}
	if asJSON {
		return writeJSON(env.Stdout, struct {
			RunID string     `json:"runId"`
			Head  store.Head `json:"head"`
		}{runID, snap.Head})
	}
	_, err = fmt.Fprintf(env.Stdout, "head: seq %d, hash %s\n", snap.Head.Seq, snap.Head.Hash)
	return err
}

// describeDebit renders a ledger debit, which progress views leave out
// and the trace shows: what was spent, on which attempt or item.
func describeDebit(ev engine.Event) string {
	var d struct {
		Amount    engine.Value `json:"amount"`
		Attempt   int          `json:"attempt"`
		ItemIndex *int         `json:"itemIndex"`
		Source    string       `json:"source"`
	}
	_ = ev.DecodeDetail(&d)
	who := ev.StepID
	if d.ItemIndex != nil {
		who = fmt.Sprintf("%s[%d]", who, *d.ItemIndex)
	}
	s := "spent " + compactJSON(d.Amount)
	var on []string
	if d.Attempt > 0 {
		on = append(on, fmt.Sprintf("attempt %d", d.Attempt))
	}
	if d.Source != "" {
		on = append(on, "reported by "+d.Source)
	}
	if len(on) > 0 {
		s += " (" + strings.Join(on, ", ") + ")"
	}
	if who != "" {
		return who + ": " + s
	}
	return s
}
