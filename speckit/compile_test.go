package speckit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/stratum-go/stratum/internal/proctest"
	"github.com/stratum-go/stratum/ir"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/compile")

// TestCompileGolden runs every testdata/compile/*.txtar archive. Files under
// "tasks/" are written to a fresh directory and compiled with CompileTool.
// The archive comment may set options, one per line: "flow: NAME" (the
// flow_name argument) and "dir: PATH" (tasks_dir relative to the temporary
// root instead of "tasks"). Goldens: "want/spec.yaml" (the emitted YAML, for
// an ok response) and "want/response.json" (the response, its yaml field
// blanked; the temporary root is written $ROOT).
func TestCompileGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "compile", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no fixtures in testdata/compile")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			root := t.TempDir()
			req := Request{TasksDir: filepath.Join(root, "tasks")}
			if err := os.Mkdir(req.TasksDir, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(string(ar.Comment), "\n") {
				if v, ok := strings.CutPrefix(line, "flow: "); ok {
					req.FlowName = v
				}
				if v, ok := strings.CutPrefix(line, "dir: "); ok {
					req.TasksDir = filepath.Join(root, v)
				}
			}
			for _, f := range ar.Files {
				name, ok := strings.CutPrefix(f.Name, "tasks/")
				if !ok {
					continue
				}
				path := filepath.Join(root, "tasks", filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, f.Data, 0o644); err != nil {
					t.Fatal(err)
				}
			}

			resp := CompileTool(context.Background(), req)
			spec := []byte(resp.YAML)
			if resp.Status == StatusOK {
				// The compiler validates its output; assert it independently.
				if diags := ir.Validate(spec); len(diags) > 0 {
					t.Fatalf("emitted spec does not validate: %v\n%s", diags, spec)
				}
				// Same input, same bytes.
				again := CompileTool(context.Background(), req)
				if again.YAML != resp.YAML {
					t.Fatal("compiling the same directory twice gave different YAML")
				}
			}
			resp.YAML = ""
			js, err := json.MarshalIndent(resp, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			js = append(bytes.ReplaceAll(js, []byte(root), []byte("$ROOT")), '\n')

			if *update {
				var kept []txtar.File
				for _, f := range ar.Files {
					if !strings.HasPrefix(f.Name, "want/") {
						kept = append(kept, f)
					}
				}
				if len(spec) > 0 {
					kept = append(kept, txtar.File{Name: "want/spec.yaml", Data: spec})
				}
				ar.Files = append(kept, txtar.File{Name: "want/response.json", Data: js})
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			wantSpec, _ := archiveFile(ar, "want/spec.yaml")
			if diff := cmp.Diff(string(wantSpec), string(spec)); diff != "" {
				t.Errorf("spec mismatch (-want +got):\n%s", diff)
			}
			wantJSON, _ := archiveFile(ar, "want/response.json")
			if diff := cmp.Diff(string(wantJSON), string(js)); diff != "" {
				t.Errorf("response mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func archiveFile(ar *txtar.Archive, name string) ([]byte, bool) {
	for _, f := range ar.Files {
		if f.Name == name {
			return f.Data, true
		}
	}
	return nil, false
}

func writeTasks(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestCompileStableAcrossDirectories: the output depends on the files'
// names and contents only, not on where they are or when they were written.
func TestCompileStableAcrossDirectories(t *testing.T) {
	files := map[string]string{
		"02-b.md": "# [P] B\n## Acceptance Criteria\n- [ ] file b exists\n",
		"01-a.md": "# A\nmulti\n  line: text\n",
		"03-c.md": "# C\n",
	}
	a, err := Compile(context.Background(), writeTasks(t, files), "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Compile(context.Background(), writeTasks(t, files), "")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.YAML, b.YAML) {
		t.Fatalf("different YAML for the same files:\n%s\n---\n%s", a.YAML, b.YAML)
	}
}

func TestCompileErrorsAreTyped(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		setup func(t *testing.T) string
		flow  string
		want  ErrorType
		cause error // checked with errors.Is when set
	}{
		{
			name:  "missing directory",
			setup: func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope") },
			want:  DirectoryNotFound,
			cause: os.ErrNotExist,
		},
		{
			name: "a file, not a directory",
			setup: func(t *testing.T) string {
				return filepath.Join(writeTasks(t, map[string]string{"a.md": "# A"}), "a.md")
			},
			want: DirectoryNotFound,
		},
		{
			name:  "no task files",
			setup: func(t *testing.T) string { return writeTasks(t, map[string]string{"README": "x"}) },
			want:  NoTasks,
		},
		{
			name: "collision",
			setup: func(t *testing.T) string {
				return writeTasks(t, map[string]string{"01-a.md": "# A", "01_a.md": "# B"})
			},
			want: StepIDCollision,
		},
		{
			name:  "reserved flow name",
			setup: func(t *testing.T) string { return writeTasks(t, map[string]string{"a.md": "# A"}) },
			flow:  "entry",
			want:  CompileFailed,
		},
		{
			name: "invalid reference in the text",
			setup: func(t *testing.T) string {
				return writeTasks(t, map[string]string{"a.md": "# A\nrun echo ${HOME}"})
			},
			want: CompileFailed,
		},
		{
			name: "a FIFO named like a task file",
			setup: func(t *testing.T) string {
				dir := writeTasks(t, map[string]string{"a.md": "# A"})
				if err := proctest.Mkfifo(filepath.Join(dir, "b.md")); errors.Is(err, errors.ErrUnsupported) {
					t.Skip(err)
				} else if err != nil {
					t.Fatal(err)
				}
				return dir
			},
			want: CompileFailed,
		},
		{
			name: "a task file over the size limit",
			setup: func(t *testing.T) string {
				return writeTasks(t, map[string]string{"a.md": "# A\n" + strings.Repeat("x", MaxTaskFileBytes)})
			},
			want: CompileFailed,
		},
		{
			name: "a directory named like a task file",
			setup: func(t *testing.T) string {
				dir := writeTasks(t, map[string]string{"a.md": "# A"})
				if err := os.Mkdir(filepath.Join(dir, "b.md"), 0o755); err != nil {
					t.Fatal(err)
				}
				return dir
			},
			want: CompileFailed,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Compile(ctx, tt.setup(t), tt.flow)
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("Compile = %v, %v; want an *Error", res, err)
			}
			if ce.Type != tt.want || ce.Message == "" {
				t.Fatalf("error %q (%s), want type %s", ce.Message, ce.Type, tt.want)
			}
			if tt.cause != nil && !errors.Is(err, tt.cause) {
				t.Fatalf("error %v does not wrap %v", err, tt.cause)
			}
		})
	}
}

func TestCompileInvalidSpecWrapsDiagnostics(t *testing.T) {
	dir := writeTasks(t, map[string]string{"01-a.md": "# A", "02-b.md": "# B\nuse ${nope.output}"})
	_, err := Compile(context.Background(), dir, "")
	var diags ir.Diagnostics
	if !errors.As(err, &diags) || len(diags) == 0 {
		t.Fatalf("error %v does not carry the ir diagnostics", err)
	}
	for _, want := range []string{"REF_UNKNOWN_STEP", "flows.tasks.steps[1].do", "task file '02-b.md'", "${...}"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not mention %q", err.Error(), want)
		}
	}
}

func TestCompileHonoursCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Compile(ctx, writeTasks(t, map[string]string{"a.md": "# A"}), "")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Compile with a cancelled context = %v", err)
	}
}

// TestResponseShapes pins the exact JSON keys of both response variants
// (docs/speckit.md: the MCP tool's request and response).
func TestResponseShapes(t *testing.T) {
	keys := func(r Response) []string {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		var out []string
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	ok := CompileTool(context.Background(), Request{TasksDir: writeTasks(t, map[string]string{"a.md": "#"})})
	if ok.Status != StatusOK {
		t.Fatalf("unexpected %+v", ok)
	}
	if diff := cmp.Diff([]string{"flow_name", "status", "steps", "yaml"}, keys(ok)); diff != "" {
		t.Errorf("ok keys (-want +got):\n%s", diff)
	}
	b, _ := json.Marshal(ok.Steps[0])
	if got := string(b); got != `{"id":"a","title":"","parallel":false,"ensures":[],"judgment":[]}` {
		t.Errorf("step summary %s", got)
	}
	bad := CompileTool(context.Background(), Request{TasksDir: t.TempDir()})
	if diff := cmp.Diff([]string{"error_type", "message", "status"}, keys(bad)); diff != "" {
		t.Errorf("error keys (-want +got):\n%s", diff)
	}
	var req Request
	if err := json.Unmarshal([]byte(`{"tasks_dir":"d","flow_name":"f"}`), &req); err != nil || req != (Request{TasksDir: "d", FlowName: "f"}) {
		t.Errorf("request wire names: %+v, %v", req, err)
	}
}
