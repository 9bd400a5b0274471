package migrate

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rogpeppe/go-internal/txtar"
)

var update = flag.Bool("update", false, "rewrite the golden reports in testdata/check")

// TestCheckGolden runs every testdata/check/*.txtar archive: the legacy
// document is "spec.yaml", the expected text report "report.txt" and the
// expected JSON report "report.json". With -update the two reports are
// rewritten from the current output (review the diff before committing).
func TestCheckGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "check", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no fixtures in testdata/check")
	}
	covered := map[string]bool{}
	defer func() {
		for id := range catalogue() {
			if !covered[id] && !*update {
				t.Errorf("no fixture produces the finding %q", id)
			}
		}
	}()
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			spec, ok := archiveFile(ar, "spec.yaml")
			if !ok {
				t.Fatalf("%s has no spec.yaml", file)
			}
			r := Check(spec)
			for _, f := range r.Findings {
				covered[f.ID] = true
			}
			var text, js bytes.Buffer
			if err := r.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			if err := r.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			if *update {
				setArchiveFile(ar, "report.txt", text.Bytes())
				setArchiveFile(ar, "report.json", js.Bytes())
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			wantText, _ := archiveFile(ar, "report.txt")
			if diff := cmp.Diff(string(wantText), text.String()); diff != "" {
				t.Errorf("text report mismatch (-want +got):\n%s", diff)
			}
			wantJSON, _ := archiveFile(ar, "report.json")
			if diff := cmp.Diff(string(wantJSON), js.String()); diff != "" {
				t.Errorf("JSON report mismatch (-want +got):\n%s", diff)
			}
			checkInvariants(t, r)
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

func setArchiveFile(ar *txtar.Archive, name string, data []byte) {
	for i, f := range ar.Files {
		if f.Name == name {
			ar.Files[i].Data = data
			return
		}
	}
	ar.Files = append(ar.Files, txtar.File{Name: name, Data: data})
}

// checkInvariants asserts what holds for every report, whatever the input.
func checkInvariants(t *testing.T, r *Report) {
	t.Helper()
	cat := catalogue()
	seen := map[string]bool{}
	for _, f := range r.Findings {
		c, known := cat[f.ID]
		if !known {
			t.Errorf("finding %q is not in the catalogue", f.ID)
			continue
		}
		if seen[f.ID] {
			t.Errorf("finding %q appears twice", f.ID)
		}
		seen[f.ID] = true
		if f.Status != c.status || f.Legacy != c.legacy || f.V1 != c.v1 {
			t.Errorf("finding %q labels differ from the catalogue", f.ID)
		}
		if f.ID != idUnreadable && f.Note != c.note {
			t.Errorf("finding %q note %q, catalogue says %q", f.ID, f.Note, c.note)
		}
		if len(f.At) == 0 {
			t.Errorf("finding %q has no location", f.ID)
			continue
		}
		if f.Line != f.At[0].Line || f.Column != f.At[0].Column {
			t.Errorf("finding %q position %d:%d is not its first location %d:%d", f.ID, f.Line, f.Column, f.At[0].Line, f.At[0].Column)
		}
		for _, loc := range f.At {
			if loc.Path == "" {
				t.Errorf("finding %q has an empty path", f.ID)
			}
			if (loc.Line == 0) != (loc.Column == 0) && f.ID != idUnreadable {
				t.Errorf("finding %q at %s has a partial position %d:%d", f.ID, loc.Path, loc.Line, loc.Column)
			}
		}
	}
}

func TestCheckNeverWritesInput(t *testing.T) {
	src := []byte("version: \"0.3\"\nflows:\n  main:\n    steps:\n      - {id: a, intent: x}\n")
	orig := bytes.Clone(src)
	Check(src)
	if !bytes.Equal(src, orig) {
		t.Fatal("Check modified its input")
	}
}

func TestJSONShape(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string
	}{
		{
			name: "no version read",
			src:  "[1, 2]\n",
			want: `{"version":null,"findings":[{"id":"unreadable","status":"diagnostic","legacy":"legacy document","v1":"none","note":"YAML root must be a mapping","line":1,"column":1,"at":[{"path":"root","line":1,"column":1}]}]}`,
		},
		{
			name: "empty version string is still a version",
			src:  "version: ''\n",
			want: `{"version":"","findings":[{"id":"unreadable","status":"diagnostic","legacy":"legacy document","v1":"none","note":"expected version 0.1, 0.2, or 0.3","line":1,"column":1,"at":[{"path":"version","line":1,"column":1}]}]}`,
		},
		{
			name: "clean document",
			src:  "version: '0.1'\n",
			want: `{"version":"0.1","findings":[]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(Check([]byte(tt.src)))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestVersionText(t *testing.T) {
	tests := []struct {
		yaml       string
		want       string
		hasVersion bool
	}{
		{`"0.2"`, "0.2", true},
		{`0.2`, "0.2", true},
		{`0.10`, "0.1", true},
		{`1`, "1", true},
		{`1.0`, "1", true},
		{`+1`, "1", true},
		{`017`, "17", true}, // decimal in YAML 1.2, not octal
		{`0o17`, "15", true},
		{`0x1F`, "31", true},
		{`1e3`, "1000", true},
		{`1e21`, "1e+21", true},
		{`1e-7`, "1e-7", true},
		{`0.000001`, "0.000001", true},
		{`123456789012345678901234`, "1.2345678901234569e+23", true},
		{`.inf`, "Infinity", true},
		{`-.inf`, "-Infinity", true},
		{`.nan`, "NaN", true},
		{`-0`, "0", true},
		{`1_000`, "1_000", true}, // a string in YAML 1.2
		{`yes`, "yes", true},     // a string in YAML 1.2
		{`!!str 0.2`, "0.2", true},
		{`true`, "", false},
		{`~`, "", false},
		{`[0.2]`, "", false},
		{`{v: 0.2}`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.yaml, func(t *testing.T) {
			r := Check([]byte("version: " + tt.yaml + "\n"))
			if r.HasVersion != tt.hasVersion || r.Version != tt.want {
				t.Errorf("version %s read as (%q, %v), want (%q, %v)", tt.yaml, r.Version, r.HasVersion, tt.want, tt.hasVersion)
			}
			legacy := tt.want == "0.1" || tt.want == "0.2" || tt.want == "0.3"
			unreadable := len(r.Findings) > 0 && r.Findings[0].ID == idUnreadable
			if legacy == unreadable {
				t.Errorf("version %s: unreadable finding = %v, want %v", tt.yaml, unreadable, !legacy)
			}
		})
	}
}

// TestAliasBombIsLinear makes sure a document whose aliases expand
// exponentially is scanned without expanding them.
func TestAliasBombIsLinear(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: '0.3'\nx0: &a0 [{depends_on: []}]\n")
	for i := 1; i < 40; i++ {
		prev := "*a" + strconv.Itoa(i-1)
		b.WriteString("x" + strconv.Itoa(i) + ": &a" + strconv.Itoa(i) + " [" + prev + ", " + prev + "]\n")
	}
	b.WriteString("flows:\n  main:\n    steps:\n      - {id: d, type: decompose, tasks: *a39}\n")
	r := Check([]byte(b.String()))
	ids := findingIDs(r)
	if diff := cmp.Diff([]string{idDecompose}, ids); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func findingIDs(r *Report) []string {
	var ids []string
	for _, f := range r.Findings {
		ids = append(ids, f.ID)
	}
	return ids
}
