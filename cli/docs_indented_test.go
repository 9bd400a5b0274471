package cli

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestDocCommandsIndented holds docCommands to reading indented code
// blocks as Markdown does: 4 spaces more than the text they belong to,
// after a blank line, so that a list's continuation lines and an indented
// line of a paragraph stay prose; and to running a list's blocks as one
// session.
func TestDocCommandsIndented(t *testing.T) {
	tests := []struct {
		name, md string
		want     []docCommand // text, line and script
	}{
		{name: "top-level block after a blank line", md: "Point the server at it:\n\n    export X=1\n    stratum guard descriptors   # shows it\n",
			want: []docCommand{{text: "stratum guard descriptors", line: 4, script: "export X=1\nstratum guard descriptors   # shows it"}}},
		{name: "indented line of a paragraph", md: "Some text\n    stratum validate x.yaml is what it runs\n"},
		{name: "list continuation", md: "1. Create a key\n   stratum guard register is next\n\n   stratum guard verify comes later\n"},
		{name: "paragraph of a bullet at 4 spaces", md: "- A bullet\n\n    stratum run here is a paragraph of the bullet\n"},
		{name: "block under a numbered item", md: "1. Step:\n\n       echo '{}' |\n         stratum guard history\n",
			want: []docCommand{{text: "stratum guard history", line: 4, script: "echo '{}' |\nstratum guard history"}}},
		{name: "a list's blocks are one session",
			md: "1. Make:\n\n       touch a\n\n2. Use:\n\n       cat a\n       stratum guard history < a\n\n   More prose of step 2.\n3. Again:\n\n       stratum guard verify ID\n",
			want: []docCommand{
				{text: "stratum guard history", line: 8, script: "touch a\ncat a\nstratum guard history < a"},
				{text: "stratum guard verify ID", line: 13, script: "stratum guard verify ID"},
			}},
		{name: "a list's session ends with the list",
			md:   "1. Make:\n\n       touch a\n\nNot the list.\n\n    stratum guard history\n",
			want: []docCommand{{text: "stratum guard history", line: 7, script: "stratum guard history"}}},
		{name: "nested list", md: "1. Outer\n   - inner\n\n       stratum run is prose of inner\n\n         stratum guard history\n",
			want: []docCommand{{text: "stratum guard history", line: 6, script: "stratum guard history"}}},
		{name: "fenced block inside a list item", md: "1. Step:\n\n   ```sh\n   stratum guard history\n   ```\n",
			want: []docCommand{{text: "stratum guard history", line: 4, script: "stratum guard history"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "doc.md")
			if err := os.WriteFile(path, []byte(tt.md), 0o644); err != nil {
				t.Fatal(err)
			}
			got := docCommands(t, path)
			if !slices.Equal(got, tt.want) {
				t.Errorf("docCommands:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
