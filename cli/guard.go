package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/stratum-go/stratum/guard"
	"github.com/stratum-go/stratum/judge"
	"github.com/stratum-go/stratum/policy"
)

// maxGuardInput bounds the JSON read from stdin.
const maxGuardInput = 16 << 20

type guardCmd struct {
	// head: verify --head HEAD, a head kept from an earlier verify.
	head string
	// roots: --allow-root DIR and --policy FILE, the roots a
	// workspace_root may lie in (default: the working directory), from
	// the same policy as every other command (docs/policy.md).
	roots policy.Flags
}

func (*guardCmd) Name() string { return "guard" }
func (*guardCmd) Synopsis() string {
	return "ACTION [--allow-root DIR]... [--policy FILE]  (JSON arguments on stdin; verify [--head HEAD] takes RESOURCE_ID)"
}
func (*guardCmd) Short() string {
	return "evidence-gated state machines for external trackers (register, transition, ...)"
}

func (*guardCmd) Long() string {
	return `Operate on guarded resources: state machines whose moves are accepted only
when the server itself has verified the evidence, every attempt recorded in a
hash-chained ledger (see docs/guard.md).

Each action reads one JSON object of arguments on stdin (empty input is {})
and prints one line of JSON on stdout. Exit status 0 for every result,
including "refused", "replayed", "unchanged" and "deviation"; 1 with
{"status":"error","error_type":...,"message":...} for an error, and 1 with
a message on stderr (nothing on stdout) for an unknown or missing ACTION;
2 for arguments in the wrong place (verify without RESOURCE_ID, JSON
arguments given on the command line).

Actions and their arguments (? = optional):
  register     resource_id, graph, edge_predicates, initial,
               terminal?, stakes?, workspace_root?
  transition   resource_id, from_state, to_state, artifacts,
               modified_files?, idempotency_key?, resolved_by?,
               expected_policy_checksum?
  override     resource_id, from_state, to_state, authorization, rationale,
               resolved_by?
  migrate      resource_id, new_graph, new_edge_predicates, authorization,
               rationale, new_terminal?, new_stakes?
  upgrade      resource_id, new_graph, new_edge_predicates, rationale,
               new_terminal?, new_stakes?
  authorize    kind (override|migrate), resource_id, rationale; from_state and
               to_state for override; new_graph, new_edge_predicates,
               new_terminal?, new_stakes? for migrate.
               Prints the exact payload to sign and how to sign it.
  descriptors  (no arguments) report the signed upgrade descriptor file
  history      resource_id
  verify       RESOURCE_ID as an argument: re-check the registry's seal and
               checksum, every ledger line strictly, and the ledger against
               the head the registry recorded. Prints "head": keep it
               somewhere this machine's users cannot write; later,
               verify --head HEAD RESOURCE_ID also proves the history still
               contains it (what no local check can catch).

A workspace_root must lie inside an allowed root: the working directory
(unless it is /), or each --allow-root DIR given and each of the roots: of
a --policy FILE (docs/policy.md).

Signed upgrade descriptors are applied with the MCP tool
stratum_guard_apply_upgrade only.

Environment:
  STRATUM_GUARDS_DIR                store (default $STRATUM_HOME/guards, ~/.stratum/guards)
  STRATUM_GUARD_ALLOW_COMMANDS=1    allow command_exit_zero evidence
  STRATUM_GUARD_CMD_TIMEOUT_S       command evidence timeout (default 120)
  STRATUM_GUARD_UPGRADE_DESCRIPTORS absolute path of the signed descriptor file
  STRATUM_JUDGE_COMMAND             judge for verified/judged predicates
  STRATUM_JUDGE_TIMEOUT_S           judge timeout (default 120)`
}

func (c *guardCmd) SetFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.head, "head", "", "verify only: a `HEAD` printed by an earlier verify (or an entry digest) that the history must still contain")
	c.roots.RegisterRoots(fs)
}

// guardAction decodes its request from stdin and calls the guard.
type guardAction func(ctx context.Context, g *guard.Guard, in []byte) (any, error)

func decodeAndCall[Req any, Res any](call func(*guard.Guard, context.Context, Req) (Res, error)) guardAction {
	return func(ctx context.Context, g *guard.Guard, in []byte) (any, error) {
		var req Req
		if err := guard.DecodeRequest(in, &req); err != nil {
			return nil, err
		}
		return call(g, ctx, req)
	}
}

// guardActions maps each stdin-driven action to its call.
func guardActions() map[string]guardAction {
	return map[string]guardAction{
		"register":   decodeAndCall((*guard.Guard).Register),
		"transition": decodeAndCall((*guard.Guard).Transition),
		"override":   decodeAndCall((*guard.Guard).Override),
		"migrate":    decodeAndCall((*guard.Guard).Migrate),
		"upgrade":    decodeAndCall((*guard.Guard).Upgrade),
		"authorize":  decodeAndCall((*guard.Guard).Authorize),
		"history":    decodeAndCall((*guard.Guard).History),
		"descriptors": func(ctx context.Context, g *guard.Guard, in []byte) (any, error) {
			var none struct{}
			if err := guard.DecodeRequest(in, &none); err != nil {
				return nil, err
			}
			return g.Descriptors(ctx)
		},
	}
}

func guardActionNames() []string {
	names := []string{"verify"}
	for k := range guardActions() {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func (c *guardCmd) Run(ctx context.Context, env *Env, args []string) error {
	action := ""
	if len(args) > 0 {
		action = args[0]
	}
	call, known := guardActions()[action]
	if !known && action != "verify" {
		// Stderr only, exit 1 (docs/guard.md, "Quick start (CLI)"). A
		// missing action is said as such rather than as the unknown action "".
		what := fmt.Sprintf("Unknown guard action: %s.", action)
		if action == "" {
			what = "Missing guard action."
		}
		fmt.Fprintf(env.Stderr, "%s Expected one of: %s.\n", what, strings.Join(guardActionNames(), ", "))
		return exitCode(ExitFailure)
	}
	if action == "verify" {
		if len(args) != 2 {
			return usagef("verify takes exactly one RESOURCE_ID argument")
		}
	} else if len(args) != 1 {
		return usagef("guard %s takes its arguments as JSON on stdin, not as %q", action, args[1])
	} else if c.head != "" {
		return usagef("--head is an option of guard verify only")
	}
	pol, err := newPolicy(systemConfig{command: "stratum guard", mode: policy.Person, flags: c.roots})
	if err != nil {
		return err
	}
	g, err := newGuard(env, pol.Roots())
	if err != nil {
		return printGuard(env, nil, err)
	}
	if action == "verify" {
		res, err := g.Verify(ctx, guard.VerifyRequest{ResourceID: args[1], Head: c.head})
		return printGuard(env, res, err)
	}
	if isTerminal(env.Stdin) {
		// Otherwise a person who typed "stratum guard history" sees a
		// command that hangs for no visible reason.
		fmt.Fprintf(env.Stderr, "stratum guard %s: reading its JSON arguments from standard input; end them with Ctrl-D (\"stratum help guard\" lists them)\n", action)
	}
	in, err := io.ReadAll(io.LimitReader(env.Stdin, maxGuardInput+1))
	if err != nil {
		return printGuard(env, nil, &guard.Error{Code: guard.CodeInvalidArgument, Message: "read stdin: " + err.Error(), Err: err})
	}
	if len(in) > maxGuardInput {
		return printGuard(env, nil, &guard.Error{Code: guard.CodeInvalidArgument, Message: fmt.Sprintf("guard arguments larger than %d bytes", maxGuardInput)})
	}
	res, err := call(ctx, g, in)
	return printGuard(env, res, err)
}

func newGuard(env *Env, allowRoots []string) (*guard.Guard, error) {
	root, err := guard.RootFromEnv(env.getenv)
	if err != nil {
		return nil, err
	}
	j, err := judge.FromEnv(env.getenv)
	if err != nil {
		return nil, &guard.Error{Code: guard.CodeInvalidArgument, Message: "judge configuration: " + err.Error(), Err: err}
	}
	return guard.New(guard.Options{Root: root, Getenv: env.getenv, Judge: j, AllowedRoots: allowRoots})
}

// printGuard writes one compact JSON line: the result, or the error
// envelope (then exit status 1).
func printGuard(env *Env, res any, err error) error {
	var out any = res
	if err != nil {
		out = guard.Envelope(err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if encErr := enc.Encode(out); encErr != nil {
		return fmt.Errorf("encode result: %w", encErr)
	}
	if _, werr := env.Stdout.Write(buf.Bytes()); werr != nil {
		return werr
	}
	if err != nil {
		return exitCode(ExitFailure)
	}
	return nil
}
