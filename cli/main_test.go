package cli

import (
	"flag"
	"slices"
	"testing"
)

func TestParseInterspersed(t *testing.T) {
	tests := []struct {
		args    []string
		wantPos []string
		wantFmt string
		wantB   bool
		wantErr bool
	}{
		{args: []string{"a.yaml", "--json"}, wantPos: []string{"a.yaml"}, wantB: true},
		{args: []string{"--format", "github", "a", "b"}, wantPos: []string{"a", "b"}, wantFmt: "github"},
		{args: []string{"a", "--format=json", "b"}, wantPos: []string{"a", "b"}, wantFmt: "json"},
		{args: []string{"-"}, wantPos: []string{"-"}},
		{args: []string{"--", "--json"}, wantPos: []string{"--json"}},
		{args: []string{"-result.n"}, wantPos: []string{"-result.n"}},
		{args: []string{"- -3", "--json"}, wantPos: []string{"- -3"}, wantB: true},
		{args: []string{"-1"}, wantPos: []string{"-1"}},
		{args: []string{"--format", "-weird.value"}, wantFmt: "-weird.value"},
		{args: []string{"--nope"}, wantErr: true},
		{args: []string{"--format"}, wantErr: true},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(discard{})
		format := fs.String("format", "", "")
		b := fs.Bool("json", false, "")
		pos, err := parseInterspersed(fs, tt.args)
		if (err != nil) != tt.wantErr {
			t.Errorf("%q: err = %v, wantErr %v", tt.args, err, tt.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if !slices.Equal(pos, tt.wantPos) || *format != tt.wantFmt || *b != tt.wantB {
			t.Errorf("%q: positional %q format %q json %v; want %q %q %v", tt.args, pos, *format, *b, tt.wantPos, tt.wantFmt, tt.wantB)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
