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

	"github.com/stratum-go/stratum/ir"
)

// validateCmd is "stratum validate": check spec files strictly and report
// every problem with its position.
type validateCmd struct {
	format string
	json   bool
}

func (*validateCmd) Name() string     { return "validate" }
func (*validateCmd) Synopsis() string { return "[--format text|json|github] [--json] FILE..." }
func (*validateCmd) Short() string    { return "check v1 spec files and report every problem" }
func (*validateCmd) Long() string {
	return `Validate checks each FILE as a Stratum v1 spec (YAML, or JSON) and reports
every problem at once, each with its error code, position and path in the
document. "-" reads a spec from standard input.

Formats:
  text    FILE:LINE:COL: CODE: message (at PATH), then a one-line summary
  json    one JSON object per file per line:
          {"file": F, "valid": bool, "errors": [{"code","path","line","column","message"}]}
  github  GitHub Actions annotations: ::error file=F,line=L,col=C,title=CODE::message

Exit status: 0 when every file is valid, 1 when any is invalid, 2 for a
usage error or a file that cannot be read. See docs/spec-language.md for
the language and the meaning of each error code.`
}

func (c *validateCmd) SetFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.format, "format", "text", "output `FORMAT`: text, json or github")
	fs.BoolVar(&c.json, "json", false, "short for --format json")
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
	stdinUsed := false
	var (
		unreadable, invalid, problems int
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
		ds := ir.Validate(src)
		if len(ds) > 0 {
			invalid++
			problems += len(ds)
		}
		if err := writeResult(env.Stdout, format, display, ds); err != nil {
			return fmt.Errorf("write result: %w", err)
		}
	}
	if format == "text" {
		checked := len(args) - unreadable
		switch {
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
	case invalid > 0:
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
}

func writeResult(w io.Writer, format, file string, ds ir.Diagnostics) error {
	switch format {
	case "json":
		res := jsonResult{File: file, Valid: len(ds) == 0, Errors: []ir.Diagnostic(ds)}
		if res.Errors == nil {
			res.Errors = []ir.Diagnostic{}
		}
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		return enc.Encode(res)
	case "github":
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
