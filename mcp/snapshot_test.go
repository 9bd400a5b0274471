package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestToolSnapshots pins the agent-facing contract: each tool's name,
// title, description, input and output schemas and annotations, as a
// client lists them, against testdata/tools/<name>.json. Run with -update
// to accept a deliberate change (and review the diff). The server here
// infers every schema; TestSchemaCache checks that the cache a real
// server serves holds exactly the same.
func TestToolSnapshots(t *testing.T) {
	f := newFixtureWith(t, fixtureOpts{noCache: true})
	res, err := f.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("testdata", "tools")
	if *update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for _, tl := range res.Tools {
		seen[tl.Name+".json"] = true
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(tl); err != nil {
			t.Fatal(err)
		}
		b := buf.Bytes()
		path := filepath.Join(dir, tl.Name+".json")
		if *update {
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: no snapshot (run go test ./mcp -run TestToolSnapshots -update): %v", tl.Name, err)
			continue
		}
		if !bytes.Equal(want, b) {
			t.Errorf("%s: the advertised tool changed (-snapshot +now); if deliberate, rerun with -update:\n%s",
				tl.Name, cmp.Diff(string(want), string(b)))
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var stale []string
	for _, e := range entries {
		if !seen[e.Name()] {
			stale = append(stale, e.Name())
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 && !*update {
		t.Errorf("snapshots of tools the server no longer lists: %s", strings.Join(stale, ", "))
	}
	for _, name := range stale {
		if *update {
			os.Remove(filepath.Join(dir, name))
		}
	}
}

// TestToolConventions checks what every tool must have whatever its
// snapshot says: the stratum_ prefix, a description with an example, an
// object input schema that refuses unknown arguments, an output schema
// whose status is required, and explicit annotations.
func TestToolConventions(t *testing.T) {
	f := newFixture(t)
	res, err := f.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) == 0 {
		t.Fatal("no tools")
	}
	for _, tl := range res.Tools {
		if !strings.HasPrefix(tl.Name, "stratum_") || len(tl.Name) > 40 {
			t.Errorf("%s: name must start with stratum_ and stay short", tl.Name)
		}
		if !strings.Contains(tl.Description, "Example: "+tl.Name+" {") {
			t.Errorf("%s: description lacks a one-line example call", tl.Name)
		}
		in, _ := json.Marshal(tl.InputSchema)
		var inS map[string]any
		json.Unmarshal(in, &inS)
		if inS["type"] != "object" || inS["additionalProperties"] == nil {
			t.Errorf("%s: input schema must be a closed object: %s", tl.Name, in)
		}
		out, _ := json.Marshal(tl.OutputSchema)
		var outS map[string]any
		json.Unmarshal(out, &outS)
		if req, _ := outS["required"].([]any); len(req) != 1 || req[0] != "status" {
			t.Errorf("%s: output schema must require exactly status: %v", tl.Name, outS["required"])
		}
		a := tl.Annotations
		if a == nil || a.DestructiveHint == nil || a.OpenWorldHint == nil || *a.OpenWorldHint {
			t.Errorf("%s: annotations must be explicit and closed-world: %+v", tl.Name, a)
		}
		if a != nil && a.ReadOnlyHint && a.DestructiveHint != nil && *a.DestructiveHint {
			t.Errorf("%s: read-only yet destructive", tl.Name)
		}
	}
}

// TestSchemaCache: schemas.json holds exactly the inferred schemas of
// every tool (-update rewrites it).
func TestSchemaCache(t *testing.T) {
	f := newFixture(t)
	s := newServer(f.eng, slog.New(slog.DiscardHandler))
	s.guard = f.guard
	want := map[string]cachedTool{}
	var names []string
	for _, tl := range s.tools() {
		in, out := tl.infer()
		ib, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		ob, err := json.Marshal(advertisedOutput(out))
		if err != nil {
			t.Fatal(err)
		}
		want[tl.def.Name] = cachedTool{Input: ib, Output: ob}
		names = append(names, tl.def.Name)
	}
	// One tool per line, in the advertised order, so a diff is readable.
	var buf bytes.Buffer
	buf.WriteString("{\n")
	for i, name := range names {
		line, err := json.Marshal(want[name])
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&buf, "%q: %s", name, line)
		if i < len(names)-1 {
			buf.WriteString(",")
		}
		buf.WriteString("\n")
	}
	buf.WriteString("}\n")
	if *update {
		if err := os.WriteFile("schemas.json", buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(buf.Bytes(), schemaCacheJSON) {
		t.Errorf("schemas.json is stale (-cached +inferred); rerun with -update:\n%s", cmp.Diff(string(schemaCacheJSON), buf.String()))
	}
	for _, tl := range s.tools() {
		if _, ok := s.cachedSchemas(tl.def.Name); !ok {
			t.Errorf("%s: not served from the cache", tl.def.Name)
		}
	}
}
