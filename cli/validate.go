package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/ir"
	"github.com/stratum-go/stratum/policy"
)

// validateCmd is "stratum validate": check spec files strictly and report
// every problem with its position.
type validateCmd struct {
	format string
	json   bool
	// forCmd is --for mcp|run: whose defaults the effects are judged by.
	forCmd string
	policy policy.Flags
}

func (*validateCmd) Name() string { return "validate" }
func (*validateCmd) Synopsis() string {
	return "[--format text|json|github] [--json] [--for mcp|run] [--policy FILE] [--allow-commands] [--allow-agents] [--max-command-timeout D] [--max-agent-timeout D] FILE..."
}
func (*validateCmd) Short() string { return "check v1 spec files and report every problem" }
func (*validateCmd) Long() string {
	return `Validate checks each FILE as a Stratum v1 spec (YAML, or JSON) and reports
every problem at once, each with its error code, position and path in the
document. "-" reads a spec from standard input.

Formats:
  text    FILE:LINE:COL: CODE: message (at PATH), then a one-line summary
  json    one JSON object per file per line:
          {"file": F, "valid": bool, "errors": [{"code","path","line","column","message"}]}
  github  GitHub Actions annotations: ::error file=F,line=L,col=C,title=CODE::message

Effects (docs/policy.md): with --for mcp|run or any policy flag
(--policy FILE, --allow-commands, --allow-agents, --max-command-timeout,
--max-agent-timeout),
each valid spec's effects are listed too — the commands it runs, the
agents its engine fanouts start, its file reads and judged ensures — and
each one that the policy refuses, with the words stratum mcp (--for mcp,
the default) or stratum run (--for run) started with the same flags would
refuse its plan with:
  text    FILE: effect: DESCRIPTION, or FILE: refused: REFUSAL
  json    "effects": [{kind, stepId, flow, command, timeoutMs, agent,
          sandbox, allowed, refusal}] in the file's object
  github  ::error file=F,title=effect_not_allowed::REFUSAL per refusal

Exit status: 0 when every file is valid (and, when effects are listed,
every effect allowed), 1 when any is invalid or an effect is refused, 2
for a usage error, a file that cannot be read or a policy file that
cannot be used. See docs/spec-language.md for the language and the
meaning of each error code.`
}

func (c *validateCmd) SetFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.format, "format", "text", "output `FORMAT`: text, json or github")
	fs.BoolVar(&c.json, "json", false, "short for --format json")
	fs.StringVar(&c.forCmd, "for", "", "list the effects as `COMMAND` (mcp or run) would judge them (default mcp when a policy flag is given)")
	c.policy.RegisterEffects(fs)
}

func (c *validateCmd) Run(ctx context.Context, env *Env, args []string) error {
	format := c.format
	if c.json {
		if format != "text" && format != "json" {
			return usagef("--json conflicts with --format %s", format)
		}
		format = "json"
	}
	switch format {
	case "text", "json", "github":
	default:
		return usagef("unknown format %q (want text, json or github)", format)
	}
	if len(args) == 0 {
		return usagef("no spec file given (use - for standard input)")
	}
	var pol *policy.Policy
	if c.forCmd != "" || c.policy.Given() {
		cfg := systemConfig{command: "stratum mcp", mode: policy.Server, flags: c.policy}
		switch c.forCmd {
		case "", "mcp":
		case "run":
			cfg.command, cfg.mode = "stratum run", policy.Person
		default:
			return usagef("--for %q: want mcp or run", c.forCmd)
		}
		var err error
		if pol, err = newPolicy(cfg); err != nil {
			return err
		}
	}
	stdinUsed := false
	var (
		unreadable, invalid, problems int
		refused, refusing             int // refused effects, and files with one
	)
	for _, name := range args {
		if err := ctx.Err(); err != nil {
			return err
		}
		display := name
		var src []byte
		var err error
		if name == "-" {
			display = "<stdin>"
			if stdinUsed {
				return usagef("standard input (-) can be read only once")
			}
			stdinUsed = true
			src, err = readBounded(env.Stdin)
		} else {
			src, err = readFile(name)
		}
		if err != nil {
			fmt.Fprintf(env.Stderr, "stratum validate: %v\n", err)
			unreadable++
			continue
		}
		var ds ir.Diagnostics
		var effects []effectVerdict
		if pol == nil {
			ds = ir.Validate(src)
		} else {
			var plan *ir.Plan
			plan, ds = ir.Build(src)
			if len(ds) == 0 {
				effects = judgeEffects(pol, plan)
				if n := countRefused(effects); n > 0 {
					refused += n
					refusing++
				}
			}
		}
		if len(ds) > 0 {
			invalid++
			problems += len(ds)
		}
		if err := writeResultEffects(env.Stdout, format, display, ds, effects, pol != nil); err != nil {
			return fmt.Errorf("write result: %w", err)
		}
	}
	if format == "text" {
		checked := len(args) - unreadable
		switch {
		case invalid == 0 && unreadable == 0 && refused > 0:
			fmt.Fprintf(env.Stdout, "refused: %s in %d of %s (valid, but the policy does not allow them)\n", plural(refused, "effect"), refusing, plural(checked, "file"))
		case invalid == 0 && unreadable == 0:
			fmt.Fprintf(env.Stdout, "ok: %s valid\n", plural(checked, "file"))
		case invalid == 0:
			fmt.Fprintf(env.Stdout, "%s valid, %s unreadable\n", plural(checked, "file"), plural(unreadable, "file"))
		default:
			fmt.Fprintf(env.Stdout, "invalid: %s in %d of %s\n", plural(problems, "problem"), invalid, plural(checked, "file"))
		}
	}
	switch {
	case unreadable > 0:
		return exitCode(ExitUsage)
	case invalid > 0, refused > 0:
		return exitCode(ExitFailure)
	}
	return nil
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// readBounded reads at most one byte more than the spec size limit, so
// that an oversized input is reported by the validator without reading
// all of it.
func readBounded(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, ir.MaxSpecBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read standard input: %w", err)
	}
	return b, nil
}

func readFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, ir.MaxSpecBytes+1))
	if err != nil {
		// A read error from the file already names it ("read F: is a
		// directory").
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, err
		}
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return b, nil
}

type jsonResult struct {
	File   string          `json:"file"`
	Valid  bool            `json:"valid"`
	Errors []ir.Diagnostic `json:"errors"`
	// Effects are listed when a policy was given (nil otherwise).
	Effects []effectVerdict `json:"effects,omitempty"`
}

// effectVerdict is one effect of a spec and what the policy says of it.
type effectVerdict struct {
	Kind      engine.EffectKind `json:"kind"`
	StepID    string            `json:"stepId"`
	Flow      string            `json:"flow"`
	Command   string            `json:"command,omitempty"`
	TimeoutMS int64             `json:"timeoutMs,omitempty"`
	Agent     string            `json:"agent,omitempty"`
	Sandbox   string            `json:"sandbox,omitempty"`
	Allowed   bool              `json:"allowed"`
	Refusal   string            `json:"refusal,omitempty"`
	effect    engine.Effect
}

// judgeEffects asks the policy about every effect of a spec, exactly as
// the engine does at plan time.
func judgeEffects(p *policy.Policy, plan *ir.Plan) []effectVerdict {
	out := []effectVerdict{}
	for _, f := range engine.SpecEffects(plan) {
		v := effectVerdict{Kind: f.Kind, StepID: f.StepID, Flow: f.Flow, Command: f.Command, TimeoutMS: f.Timeout.Milliseconds(),
			Agent: f.Agent, Sandbox: f.Sandbox, Allowed: true, effect: f}
		if err := p.Allow(f); err != nil {
			v.Allowed, v.Refusal = false, err.Error()
		}
		out = append(out, v)
	}
	return out
}

func countRefused(vs []effectVerdict) int {
	n := 0
	for _, v := range vs {
		if !v.Allowed {
			n++
		}
	}
	return n
}

func writeResult(w io.Writer, format, file string, ds ir.Diagnostics) error {
	return writeResultEffects(w, format, file, ds, nil, false)
}

// writeResultEffects writes a file's diagnostics and, when listed, its
// effects.
func writeResultEffects(w io.Writer, format, file string, ds ir.Diagnostics, effects []effectVerdict, listed bool) error {
	switch format {
	case "json":
		res := jsonResult{File: file, Valid: len(ds) == 0, Errors: []ir.Diagnostic(ds), Effects: effects}
		if res.Errors == nil {
			res.Errors = []ir.Diagnostic{}
		}
		if listed && res.Effects == nil {
			res.Effects = []effectVerdict{}
		}
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		return enc.Encode(res)
	case "github":
		for _, v := range effects {
			if v.Allowed {
				continue
			}
			if _, err := fmt.Fprintf(w, "::error file=%s,title=%s::%s\n", ghProperty(file), ghProperty(engine.CodeEffectNotAllowed), ghData(v.Refusal)); err != nil {
				return err
			}
		}
		for _, d := range ds {
			msg := d.Message
			if d.Path != "" {
				msg += " (at " + d.Path + ")"
			}
			if _, err := fmt.Fprintf(w, "::error file=%s,line=%d,col=%d,title=%s::%s\n",
				ghProperty(file), d.Line, d.Column, ghProperty(d.Code), ghData(msg)); err != nil {
				return err
			}
		}
		return nil
	default:
		for _, d := range ds {
			at := d.Path
			if at == "" {
				at = "document root"
			}
			if _, err := fmt.Fprintf(w, "%s:%d:%d: %s: %s (at %s)\n", file, d.Line, d.Column, d.Code, d.Message, at); err != nil {
				return err
			}
		}
		for _, v := range effects {
			line := fmt.Sprintf("%s: effect: %s\n", file, effectLine(v.effect))
			if !v.Allowed {
				line = fmt.Sprintf("%s: refused: %s\n", file, v.Refusal)
			}
			if _, err := io.WriteString(w, line); err != nil {
				return err
			}
		}
		return nil
	}
}

// ghData escapes a workflow command's message (GitHub's escapeData).
func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// ghProperty escapes a workflow command property value (escapeProperty).
func ghProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
