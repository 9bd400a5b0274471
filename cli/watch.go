package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/internal/eventtext"
)

// watchCmd is "stratum watch RUN": follow a run live from its event log.
type watchCmd struct {
	json     bool
	events   bool
	kinds    string
	interval time.Duration
}

func (*watchCmd) Name() string     { return "watch" }
func (*watchCmd) Synopsis() string { return "[--json | --events [--kinds K1,K2]] [--interval D] RUN" }
func (*watchCmd) Short() string    { return "follow a run live until it ends" }
func (*watchCmd) Long() string {
	return `Watch follows run RUN from the start of its event log, printing each event
as it is recorded, until the run ends (or you interrupt it). It only reads:
the run goes on whoever drives it (stratum run, an MCP client).

Text mode prints "TIME  what happened" per event (in the words of stratum
audit), then the run's output or failure; on a terminal a status line
under them shows the run's status and what it waits on. --json
(or --events) prints each event as one compact JSON line: {seq, type,
stepId?, detail?, at}. --kinds (with --events) keeps only the listed event
types, e.g. --kinds result,gate_waiting,completed.

Exit status: 0 when the run completed, 1 when it failed, was killed,
exhausted its budget or was cancelled (or the watch was interrupted),
2 for a usage error or an unknown run.`
}

func (c *watchCmd) SetFlags(fs *flag.FlagSet) {
	fs.BoolVar(&c.json, "json", false, "print events as JSON lines")
	fs.BoolVar(&c.events, "events", false, "print events as JSON lines (with --kinds to filter)")
	fs.StringVar(&c.kinds, "kinds", "", "with --events: only these comma-separated event `TYPES`")
	fs.DurationVar(&c.interval, "interval", 500*time.Millisecond, "how often to read the run of a file store, as a `DURATION` (250ms, 2s); a PostgreSQL store says when the run is written")
}

func (c *watchCmd) Run(ctx context.Context, env *Env, args []string) error {
	if c.json && c.events {
		return usagef("--json and --events are exclusive")
	}
	if c.kinds != "" && !c.events {
		return usagef("--kinds needs --events")
	}
	if len(args) != 1 {
		return usagef("expected one run id, got %d arguments", len(args))
	}
	if c.interval <= 0 {
		return usagef("--interval must be positive")
	}
	var keep map[engine.EventType]bool
	if c.kinds != "" {
		keep = map[engine.EventType]bool{}
		known := engine.EventTypes()
		for _, k := range strings.Split(c.kinds, ",") {
			k := engine.EventType(strings.TrimSpace(k))
			if !slices.Contains(known, k) {
				names := make([]string, len(known))
				for i, t := range known {
					names[i] = string(t)
				}
				return usagef("unknown event kind %q (known: %s)", k, strings.Join(names, ", "))
			}
			keep[k] = true
		}
	}
	runID := args[0]
	sys, err := openSystem(env, systemConfig{})
	if err != nil {
		return err
	}
	defer sys.Close()
	e := sys.engine
	wake, stopWakeups := sys.wakeups(ctx, runID, c.interval)
	defer stopWakeups()
	asJSON := c.json || c.events
	live := !asJSON && isTerminalWriter(env.Stdout)
	var cursor int64
	statusShown := false
	clearStatus := func() {
		if statusShown {
			fmt.Fprint(env.Stdout, "\r\033[K")
			statusShown = false
		}
	}
	for {
		p, err := e.Poll(ctx, runID, cursor)
		if err != nil {
			clearStatus()
			if ctx.Err() != nil {
				fmt.Fprintln(env.Stderr, "stratum watch: stopped watching; the run goes on")
				return exitCode(ExitFailure)
			}
			if isNotFound(err) {
				fmt.Fprintf(env.Stderr, "stratum watch: unknown run_id %s\n", runID)
				return exitCode(ExitUsage)
			}
			return err
		}
		cursor = p.NextCursor
		if len(p.Events) > 0 {
			clearStatus()
		}
		for _, ev := range p.Events {
			if keep != nil && !keep[ev.Type] {
				continue
			}
			if asJSON {
				writeEventJSON(env.Stdout, ev)
				continue
			}
			desc := eventtext.Describe(ev)
			if desc == "" {
				continue
			}
			fmt.Fprintf(env.Stdout, "%s  %s\n", ev.At.Local().Format("15:04:05.000"), printable(desc))
		}
		if p.Status != engine.StatusRunning && p.Status != engine.StatusReady {
			clearStatus()
			if !asJSON {
				// What the run ended with, as audit prints it.
				switch {
				case p.Output.Present:
					fmt.Fprintf(env.Stdout, "output: %s\n", compactJSON(p.Output))
				case p.Failure != nil:
					fmt.Fprintf(env.Stdout, "failure: %s%s\n", printable(p.Failure.Reason), eventtext.CauseNote(p.Failure.Cause, p.Failure.Step))
				}
			}
			if p.Status == engine.StatusCompleted {
				return nil
			}
			return exitCode(ExitFailure)
		}
		if live {
			fmt.Fprint(env.Stdout, "\r\033[K"+statusLine(p))
			statusShown = true
		}
		select {
		case <-ctx.Done():
			clearStatus()
			fmt.Fprintln(env.Stderr, "stratum watch: stopped watching; the run goes on")
			return exitCode(ExitFailure)
		case <-wake:
		}
	}
}

// statusLine is the one-line state of a running run.
func statusLine(p *engine.PollReport) string {
	s := fmt.Sprintf("run %s: %s, %s", shortID(p.RunID), p.Status, plural(int(p.NextCursor), "event"))
	if r := p.Response; r != nil {
		var ready, waits []string
		for _, e := range r.Ready {
			ready = append(ready, e.ID)
		}
		for _, w := range r.Waiting {
			waits = append(waits, w.StepID+" ("+string(w.Kind)+")")
		}
		if len(ready) > 0 {
			s += "; working on " + strings.Join(ready, ", ")
		}
		if len(waits) > 0 {
			s += "; waiting on " + strings.Join(waits, ", ")
		}
	}
	return s
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// writeEventJSON writes {seq, type, stepId?, detail?, at} on one line.
func writeEventJSON(w io.Writer, ev engine.Event) {
	doc := struct {
		Seq    int64            `json:"seq"`
		Type   engine.EventType `json:"type"`
		StepID string           `json:"stepId,omitempty"`
		Detail json.RawMessage  `json:"detail,omitempty"`
		At     string           `json:"at"`
	}{ev.Seq, ev.Type, ev.StepID, ev.Detail, ev.At.UTC().Format(time.RFC3339Nano)}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(doc)
}

// isTerminalWriter reports whether w is an interactive terminal.
func isTerminalWriter(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}
