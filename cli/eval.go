package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/stratum-go/stratum/expr"
)

// evalCmd is "stratum eval": evaluate one expression of the v1 language,
// the way an ensure, when, set or iterate.until would, and print the value
// or the error as one JSON line.
type evalCmd struct {
	bindings  string
	workspace string
}

func (*evalCmd) Name() string     { return "eval" }
func (*evalCmd) Synopsis() string { return "[--bindings FILE|-] [--workspace DIR] EXPR" }
func (*evalCmd) Short() string    { return "evaluate an ensure/when expression against JSON bindings" }

func (*evalCmd) Long() string {
	return `Evaluate EXPR, an expression of the v1 expression language (the language of
ensure, when, set and iterate.until; see docs/expressions.md), and print one
JSON line. Output and exit status:

  {"value": V}                                  0
  {"error": {"code": C, "message": M}}          1

C is one of parse_error, unknown_identifier, unknown_function, type_error,
validation_error, resource_limit. Usage mistakes and unreadable bindings
exit 2.

--bindings names a file (or - for standard input) holding a JSON object
whose keys are among result, input, item and prev; names it does not bind
are unknown identifiers. --workspace lets file_exists and file_contains
look at files, jailed to DIR; without it they fail with a message saying
to pass --workspace. An expression that starts with '-' needs no quoting beyond
the shell's ("--" before it also works):

  stratum eval --bindings out.json 'result.confidence > 0.7 && len(result.label) > 0'
  echo '{"result": {"n": 3}}' | stratum eval --bindings - '-result.n'`
}

func (c *evalCmd) SetFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.bindings, "bindings", "", "`FILE` with a JSON object of result, input, item, prev (- for stdin)")
	fs.StringVar(&c.workspace, "workspace", "", "`DIR` that file_exists and file_contains are jailed to")
}

func (c *evalCmd) Run(ctx context.Context, env *Env, args []string) error {
	if len(args) != 1 {
		return usagef("expected exactly one expression, got %d arguments (quote the expression)", len(args))
	}
	b, err := c.readBindings(env)
	if err != nil {
		return err
	}
	opts := &expr.EvalOptions{}
	if c.workspace != "" {
		info, err := os.Stat(c.workspace)
		if err != nil {
			return usagef("--workspace: %v", err)
		}
		if !info.IsDir() {
			return usagef("--workspace: %s is not a directory", c.workspace)
		}
		opts.WorkspaceRoot = c.workspace
	}
	out := expr.NewObject(1)
	v, evalErr := expr.Evaluate(ctx, args[0], b, opts)
	if err := evalErr; err != nil {
		var e *expr.Error
		if !errors.As(err, &e) {
			return fmt.Errorf("evaluate: %w", err)
		}
		msg := e.Message
		if e.Code == expr.CodeValidation && c.workspace == "" && usesFiles(args[0]) {
			// Not the expression's fault: this command was given no
			// directory for the file functions to read.
			msg = "file_exists and file_contains need a workspace: pass --workspace DIR to let them read the files under DIR"
		}
		detail := expr.NewObject(2)
		detail.Set("code", string(e.Code))
		detail.Set("message", msg)
		out.Set("error", detail)
	} else {
		out.Set("value", v)
	}
	line, err := expr.EncodeJSON(out)
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	fmt.Fprintf(env.Stdout, "%s\n", line)
	if evalErr != nil {
		return exitCode(ExitFailure)
	}
	return nil
}

func (c *evalCmd) readBindings(env *Env) (expr.Bindings, error) {
	if c.bindings == "" {
		return expr.Bindings{}, nil
	}
	var data []byte
	var err error
	if c.bindings == "-" {
		data, err = io.ReadAll(env.Stdin)
	} else {
		data, err = os.ReadFile(c.bindings)
	}
	if err != nil {
		return expr.Bindings{}, usagef("--bindings: %v", err)
	}
	v, err := expr.DecodeJSON(data)
	if err != nil {
		return expr.Bindings{}, usagef("--bindings %s: %v", c.bindings, err)
	}
	obj, ok := v.(*expr.Object)
	if !ok {
		return expr.Bindings{}, usagef("--bindings %s: want a JSON object with keys among result, input, item, prev", c.bindings)
	}
	b, err := expr.BindingsFromObject(obj)
	if err != nil {
		return expr.Bindings{}, usagef("--bindings %s: %v", c.bindings, err)
	}
	return b, nil
}

// usesFiles reports whether an expression calls a file function.
func usesFiles(src string) bool {
	p, err := expr.Compile(src)
	return err == nil && p.UsesFileFunctions()
}
