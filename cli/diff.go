package cli

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/stratum-go/stratum/engine"
)

// diffCmd is "stratum diff RUN STEP[/i] [--attempt N]": print the patch of
// what a step changed.
type diffCmd struct {
	attempt int
}

func (*diffCmd) Name() string     { return "diff" }
func (*diffCmd) Synopsis() string { return "RUN STEP[/INDEX] [--attempt N]" }
func (*diffCmd) Short() string    { return "print the patch of what a step changed in the workspace" }
func (*diffCmd) Long() string {
	return `Diff prints, on stdout, the patch of the changes a step of run RUN made, as
recorded in the run (a binary git patch: git apply reads it):

  STEP          a do step: what one attempt changed in the workspace, when
                the workspace is a git repository and stratum run drove it
                (the driver takes a snapshot before and after each attempt;
                docs/agents.md, "What a step changed"). The last attempt by
                default, --attempt N for another (1 is the first attempt of
                the step's current round).
  STEP/INDEX    item INDEX of a worktree fanout: the changes captured in
                the item's worktree (merged into the workspace when the
                fanout settles).

A step inside a subflow is RUNSTEP/STEP. stratum gate show lists the
steps a gate reviews with the diff stat of each.

Exit status: 0 the patch was printed; 1 there is no patch to print (the
step changed nothing, its changes were not recorded or its patch was too
large to keep: stderr says which); 2 usage, an invalid or unknown RUN, or
a STEP the run does not have.`
}

func (c *diffCmd) SetFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.attempt, "attempt", 0, "the attempt `N` of a do step (default: the last)")
}

func (c *diffCmd) Run(ctx context.Context, env *Env, args []string) error {
	if len(args) != 2 {
		return usagef("expected RUN STEP[/INDEX], got %d arguments", len(args))
	}
	if c.attempt < 0 {
		return usagef("--attempt must be 1 or more")
	}
	runID, stepID := args[0], args[1]
	say := func(code int, format string, a ...any) error {
		fmt.Fprintf(env.Stderr, "stratum diff: "+format+"\n", a...)
		return exitCode(code)
	}
	if msg := runIDProblem(runID); msg != "" {
		return say(ExitUsage, "%s", msg)
	}
	sys, err := openSystem(env, systemConfig{})
	if err != nil {
		return err
	}
	defer sys.Close()
	a, err := sys.engine.Audit(ctx, runID)
	if isNotFound(err) {
		return say(ExitUsage, "no run %s in %s (\"stratum query flows\" lists the runs there)", runID, sys.root)
	}
	if err != nil {
		return err
	}
	sv, item, ok := locateStep(a.Steps, stepID)
	switch {
	case !ok:
		return say(ExitUsage, "run %s has no step %s", runID, stepID)
	case item >= 0:
		if c.attempt != 0 {
			return usagef("--attempt goes with a do step, not a fanout item")
		}
		return c.item(ctx, env, sys.engine, runID, stepID, sv, item, say)
	case sv.Fanout != nil:
		var with []string
		for _, it := range sv.Fanout.Items {
			if it.PatchBytes > 0 {
				with = append(with, fmt.Sprintf("%s/%d", stepID, it.Index))
			}
		}
		if len(with) == 0 {
			return say(ExitFailure, "%s is a fanout: name one of its items (STEP/INDEX); none has recorded changes", stepID)
		}
		return say(ExitFailure, "%s is a fanout: name one of its items (items with changes: %s)", stepID, strings.Join(with, ", "))
	}
	n := len(sv.Attempts)
	if n == 0 {
		return say(ExitFailure, "%s has no attempt: it is not a do step or has not run yet, so nothing of it changed the workspace", stepID)
	}
	pick := n
	if c.attempt > 0 {
		if c.attempt > n {
			return say(ExitUsage, "%s has %s in its current round; --attempt %d is not one of them", stepID, plural(n, "attempt"), c.attempt)
		}
		pick = c.attempt
	}
	at := sv.Attempts[pick-1]
	ch := at.Changes
	switch {
	case ch == nil:
		return say(ExitFailure, "%s attempt %d: no changes were recorded (they are when stratum run drives the step in a git workspace)", stepID, pick)
	case !changed(ch):
		return say(ExitFailure, "%s attempt %d changed nothing in the workspace", stepID, pick)
	case !patchKept(ch):
		return say(ExitFailure, "%s attempt %d: its patch was not recorded; its stat:\n%s", stepID, pick, printable(ch.Stat))
	}
	patch, err := sys.engine.Patch(ctx, runID, stepID, -1, at.Attempt)
	if err != nil {
		return err
	}
	if len(patch) == 0 {
		return say(ExitFailure, "%s attempt %d: its patch is missing from the run's log", stepID, pick)
	}
	_, err = env.Stdout.Write(patch)
	return err
}

// item prints the captured patch of a worktree fanout item.
func (c *diffCmd) item(ctx context.Context, env *Env, e *engine.Engine, runID, stepID string, sv *engine.StepView, index int,
	say func(int, string, ...any) error) error {
	fanID := stepID[:strings.LastIndexByte(stepID, '/')]
	if index >= len(sv.Fanout.Items) {
		return say(ExitUsage, "fanout %s has %s; there is no item %d", fanID, plural(len(sv.Fanout.Items), "item"), index)
	}
	patch, err := e.Patch(ctx, runID, fanID, index, 0)
	if err != nil {
		return err
	}
	if len(patch) == 0 {
		it := sv.Fanout.Items[index]
		if it.Status == engine.StepSucceeded {
			return say(ExitFailure, "item %s changed nothing (or its fanout has no worktree isolation)", stepID)
		}
		return say(ExitFailure, "item %s has no recorded changes (it is %s; an item's changes are captured when it succeeds in a worktree)", stepID, it.Status)
	}
	_, err = env.Stdout.Write(patch)
	return err
}

// locateStep finds a step of an audit by its scoped id: a root step, a
// subflow's step (RUNSTEP/STEP, nested as deep as the run goes), or a
// fanout item (FANOUT/INDEX: item >= 0, the fanout's view returned). item
// is -1 for a step.
func locateStep(steps map[string]*engine.StepView, id string) (sv *engine.StepView, item int, ok bool) {
	parts := strings.Split(id, "/")
	for i, p := range parts {
		sv = steps[p]
		if sv == nil {
			return nil, -1, false
		}
		if i == len(parts)-1 {
			return sv, -1, true
		}
		if sv.Fanout != nil && i == len(parts)-2 {
			n, err := strconv.Atoi(parts[i+1])
			if err != nil || n < 0 || strconv.Itoa(n) != parts[i+1] {
				return nil, -1, false
			}
			return sv, n, true
		}
		if sv.Sub == nil {
			return nil, -1, false
		}
		steps = sv.Sub.Steps
	}
	return nil, -1, false
}
