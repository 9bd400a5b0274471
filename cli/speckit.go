package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stratum-go/stratum/internal/atomicfile"
	"github.com/stratum-go/stratum/speckit"
)

// speckitCmd is "stratum speckit compile DIR": compile a spec-kit tasks
// directory into a v1 spec.
type speckitCmd struct {
	flow   string
	out    string
	asJSON bool
}

func (*speckitCmd) Name() string     { return "speckit" }
func (*speckitCmd) Synopsis() string { return "compile DIR [--flow NAME] [-o FILE] [--json]" }
func (*speckitCmd) Short() string    { return "compile a spec-kit tasks/ directory into a v1 spec" }

func (*speckitCmd) Long() string {
	return `
Compile the spec-kit task files (*.md) directly inside DIR, in file-name
order, into a Stratum v1 spec, and print the YAML (or write it to FILE).

Each task file becomes one step. Its first heading is the title ([P] in it
marks a task that may run in parallel with its [P] neighbours); the text up
to an "## Acceptance Criteria" heading is the description; checklist items
("- [ ] ...") after that heading are criteria:

  file PATH exists          -> ensure {file_exists: PATH}
  file PATH contains "TEXT" -> ensure {file_contains: {path, text}}
  tests pass                -> ensure result.tests_pass == true
  no lint errors            -> ensure result.lint_clean == true
  anything else             -> appended to the task text ("Also verify: ...")

A sequential task waits for the task before it, or for the whole [P] group
before it; [P] tasks wait for the last sequential task. The spec is
validated before it is printed. Task text must not contain ${...} (in v1
text every ${...} is a reference).

--json prints the same answer as the MCP tool stratum_compile_speckit:
{"status":"ok","yaml":...,"flow_name":...,"steps":[...]} or
{"status":"error","error_type":...,"message":...}.

Exit status: 0 on success; 1 when the directory cannot be compiled (no task
files, a step id collision, an unreadable task file, a spec that does not
validate); 2 for a usage error or when DIR is not a directory.
`
}

func (c *speckitCmd) SetFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.flow, "flow", speckit.DefaultFlowName, "`NAME` of the generated flow")
	fs.StringVar(&c.out, "o", "", "write the spec to `FILE` (atomically) instead of standard output")
	fs.BoolVar(&c.asJSON, "json", false, "print the MCP tool's JSON response instead of the YAML")
}

func (c *speckitCmd) Run(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 || args[0] != "compile" {
		return usagef("expected the action \"compile\"")
	}
	if len(args) != 2 {
		return usagef("expected exactly one tasks directory")
	}
	if c.flow == "" {
		return usagef("--flow must not be empty")
	}
	// Pointing at the feature directory instead of its tasks/ is an easy
	// slip: its README.md or plan.md would silently become steps.
	if fi, err := os.Stat(filepath.Join(args[1], "tasks")); err == nil && fi.IsDir() {
		fmt.Fprintf(env.Stderr, "stratum speckit: note: %s has a tasks/ directory; if the task files are there, run: stratum speckit compile %s\n", args[1], filepath.Join(args[1], "tasks"))
	}
	resp := speckit.CompileTool(ctx, speckit.Request{TasksDir: args[1], FlowName: c.flow})
	if c.asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(resp); err != nil {
			return fmt.Errorf("write response: %w", err)
		}
	}
	if resp.Status != speckit.StatusOK {
		if !c.asJSON {
			fmt.Fprintf(env.Stderr, "stratum speckit: %s: %s\n", resp.ErrorType, resp.Message)
		}
		if resp.ErrorType == speckit.DirectoryNotFound {
			return exitCode(ExitUsage)
		}
		return exitCode(ExitFailure)
	}
	if c.out != "" {
		if err := atomicfile.WriteFile(c.out, []byte(resp.YAML), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", c.out, err)
		}
		if !c.asJSON {
			fmt.Fprintf(env.Stdout, "wrote %s: flow %q, %d steps\n", c.out, resp.FlowName, len(resp.Steps))
		}
		return nil
	}
	if !c.asJSON {
		if _, err := fmt.Fprint(env.Stdout, resp.YAML); err != nil {
			return fmt.Errorf("write spec: %w", err)
		}
	}
	return nil
}
