package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Exit codes shared by every command.
const (
	ExitOK      = 0 // success
	ExitFailure = 1 // the command ran and the answer is "no" (invalid spec, failed run, ...)
	ExitUsage   = 2 // bad invocation or unreadable input
)

// Env is what a command may touch of the outside world. Tests build one
// directly; Main builds it from the process.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads an environment variable; nil means os.Getenv.
	Getenv func(string) string
}

func (e *Env) getenv(key string) string {
	if e.Getenv == nil {
		return os.Getenv(key)
	}
	return e.Getenv(key)
}

// command is one subcommand. A fresh value is made for every invocation, so
// flag fields live on the command value itself.
type command interface {
	// Name is the word that selects the command ("validate").
	Name() string
	// Synopsis is the argument summary shown after the name.
	Synopsis() string
	// Short is a one-line description for the command list.
	Short() string
	// Long is the detailed help shown by "stratum help NAME".
	Long() string
	// SetFlags registers the command's flags on fs.
	SetFlags(fs *flag.FlagSet)
	// Run executes the command with the positional arguments left after
	// flag parsing and returns the process exit code. Usage mistakes are
	// reported by returning a *usageError.
	Run(ctx context.Context, env *Env, args []string) error
}

// usageError reports a bad invocation: the message and the command's
// synopsis go to stderr and the exit code is ExitUsage.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// exitError ends a command with a given exit code after it has already
// printed what it had to say.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func exitCode(code int) error {
	if code == ExitOK {
		return nil
	}
	return &exitError{code: code}
}

// Main runs the stratum command line and returns the process exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run(ctx, &Env{Stdin: stdin, Stdout: stdout, Stderr: stderr}, args)
}

func run(ctx context.Context, env *Env, args []string) int {
	if len(args) == 0 {
		printUsage(env.Stderr)
		return ExitUsage
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		return runHelp(env, args[1:])
	case "version", "--version", "-version":
		fmt.Fprintf(env.Stdout, "stratum %s\n", Version)
		return ExitOK
	}
	cmd := lookup(name)
	if cmd == nil {
		fmt.Fprintf(env.Stderr, "stratum: unknown command %q\n\n", name)
		printUsage(env.Stderr)
		return ExitUsage
	}
	fs := flag.NewFlagSet("stratum "+cmd.Name(), flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cmd.SetFlags(fs)
	positional, err := parseInterspersed(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		printCommandHelp(env.Stdout, cmd)
		return ExitOK
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "stratum %s: %v\n", cmd.Name(), err)
		fmt.Fprintf(env.Stderr, "usage: stratum %s %s\n(run \"stratum help %s\" for details)\n", cmd.Name(), cmd.Synopsis(), cmd.Name())
		return ExitUsage
	}
	return finish(env, cmd, cmd.Run(ctx, env, positional))
}

func finish(env *Env, cmd command, err error) int {
	if err == nil {
		return ExitOK
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(env.Stderr, "stratum %s: %s\n", cmd.Name(), ue.msg)
		fmt.Fprintf(env.Stderr, "usage: stratum %s %s\n(run \"stratum help %s\" for details)\n", cmd.Name(), cmd.Synopsis(), cmd.Name())
		return ExitUsage
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	fmt.Fprintf(env.Stderr, "stratum %s: %v\n", cmd.Name(), err)
	return ExitFailure
}

// parseInterspersed parses flags that may appear before, between or after
// positional arguments ("stratum validate a.yaml --json"). A lone "-" is a
// positional argument (standard input); "--" ends flag parsing. An argument
// that starts with "-" but is not shaped like a flag ("-result.n", "- -3",
// "-1") is positional too, so that expressions and negative numbers need no
// "--" in front of them.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for len(args) > 0 {
		// Parse the leading run of flags (with their values) up to the
		// first argument that is positional.
		end := 0
		for end < len(args) {
			a := args[end]
			if a == "--" || !looksLikeFlag(a) {
				break
			}
			end++
			if needsValue(fs, a) && end < len(args) {
				end++ // the flag's value, whatever it looks like
			} else if takesOptionalValue(fs, a, args[end:]) {
				args = slices.Concat(args[:end-1], []string{a + "=" + args[end]}, args[end+1:])
			}
		}
		if err := fs.Parse(args[:end]); err != nil {
			return nil, err
		}
		args = args[end:]
		if len(args) == 0 {
			break
		}
		if args[0] == "--" {
			return append(positional, args[1:]...), nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
	return positional, nil
}

// looksLikeFlag reports whether a is shaped like -name, --name or
// --name=value with a name of letters, digits and dashes.
func looksLikeFlag(a string) bool {
	name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
	if name == a || name == "" {
		return false
	}
	if i := strings.IndexByte(name, '='); i >= 0 {
		name = name[:i]
	}
	if name == "" || !isLetter(name[0]) {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !isLetter(c) && !(c >= '0' && c <= '9') && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// needsValue reports whether the flag argument a names a defined non-boolean
// flag given without "=value", so that the next argument is its value.
// optionalValue is a boolean-looking flag that takes the next argument as
// its value when that argument is shaped like one ("--head" alone, or
// "--head HASH").
type optionalValue interface {
	IsBoolFlag() bool
	AcceptsValue(next string) bool
}

// takesOptionalValue reports whether flag a is an optionalValue that
// takes rest[0].
func takesOptionalValue(fs *flag.FlagSet, a string, rest []string) bool {
	name := strings.TrimLeft(a, "-")
	if strings.Contains(name, "=") || len(rest) == 0 {
		return false
	}
	f := fs.Lookup(name)
	if f == nil {
		return false
	}
	o, ok := f.Value.(optionalValue)
	return ok && o.AcceptsValue(rest[0])
}

func needsValue(fs *flag.FlagSet, a string) bool {
	name := strings.TrimLeft(a, "-")
	if strings.Contains(name, "=") {
		return false
	}
	f := fs.Lookup(name)
	if f == nil {
		return false
	}
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return false
	}
	return true
}

func lookup(name string) command {
	for _, mk := range commands() {
		if c := mk(); c.Name() == name {
			return c
		}
	}
	return nil
}

func runHelp(env *Env, args []string) int {
	if len(args) == 0 {
		printUsage(env.Stdout)
		return ExitOK
	}
	switch args[0] {
	case "help":
		fmt.Fprint(env.Stdout, "usage: stratum help [COMMAND]\n\nWithout COMMAND, lists the commands; with one, shows its flags and details.\nExit status: 0, or 2 for an unknown command.\n")
		return ExitOK
	case "version":
		fmt.Fprint(env.Stdout, "usage: stratum version\n\nPrints the stratum version. Exit status: 0.\n")
		return ExitOK
	}
	cmd := lookup(args[0])
	if cmd == nil {
		fmt.Fprintf(env.Stderr, "stratum help: unknown command %q\n\n", args[0])
		printUsage(env.Stderr)
		return ExitUsage
	}
	printCommandHelp(env.Stdout, cmd)
	return ExitOK
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, `Stratum validates typed YAML flow specs, runs them one checked step at a
time for AI coding agents, and keeps a tamper-evident trace.

Usage:
  stratum COMMAND [flags] [arguments]

Commands:
`)
	cmds := make([]command, 0, len(commands()))
	for _, mk := range commands() {
		cmds = append(cmds, mk())
	}
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name() < cmds[j].Name() })
	width := len("version")
	for _, c := range cmds {
		width = max(width, len(c.Name()))
	}
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.Name(), c.Short())
	}
	fmt.Fprintf(w, "  %-*s  %s\n", width, "help", "show help for a command")
	fmt.Fprintf(w, "  %-*s  %s\n", width, "version", "print the stratum version")
	fmt.Fprint(w, `
Run "stratum help COMMAND" for a command's flags and details.
`)
}

func printCommandHelp(w io.Writer, cmd command) {
	fmt.Fprintf(w, "usage: stratum %s %s\n\n%s\n", cmd.Name(), cmd.Synopsis(), strings.TrimSpace(cmd.Long()))
	fs := flag.NewFlagSet(cmd.Name(), flag.ContinueOnError)
	cmd.SetFlags(fs)
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		fmt.Fprint(w, "\nFlags:\n")
		printFlags(w, fs)
	}
}

// printFlags lists flags as the synopses and docs write them (--name),
// where flag.PrintDefaults would write -name.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		placeholder, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if placeholder != "" {
			line += " " + placeholder
		}
		line += "\n    \t" + strings.ReplaceAll(usage, "\n", "\n    \t")
		if def := f.DefValue; def != "" && def != "false" && def != "0" && def != "[]" {
			if g, ok := f.Value.(flag.Getter); ok {
				if _, isString := g.Get().(string); isString {
					def = strconv.Quote(def)
				}
			}
			line += " (default " + def + ")"
		}
		fmt.Fprintln(w, line)
	})
}
