package migrate

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// WriteText writes the report in the documented text format
// (docs/migrate.md, "Reading the report"):
//
//	stratum migrate --check (v0.2)
//	report-only: no YAML was emitted or translated
//	- [SUPPORTED] function decl mode: gate + step -> gate construct
//	  carry routing fields
//	  at: functions.review.mode
//
// Positions are not part of the text format; [Report.WriteJSON] carries
// them.
func (r *Report) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("stratum migrate --check")
	if r.HasVersion {
		fmt.Fprintf(bw, " (v%s)", r.Version)
	}
	bw.WriteString("\nreport-only: no YAML was emitted or translated\n")
	if len(r.Findings) == 0 {
		bw.WriteString("No mapped legacy constructs found.\n")
	}
	for _, f := range r.Findings {
		fmt.Fprintf(bw, "- [%s] %s -> %s\n", strings.ToUpper(string(f.Status)), f.Legacy, f.V1)
		if f.Note != "" {
			fmt.Fprintf(bw, "  %s\n", f.Note)
		}
		paths := make([]string, len(f.At))
		for i, loc := range f.At {
			paths[i] = loc.Path
		}
		fmt.Fprintf(bw, "  at: %s\n", strings.Join(paths, ", "))
	}
	return bw.Flush()
}

// jsonReport is the --json shape: the version (null when none was read) and
// the findings with their positions.
type jsonReport struct {
	Version  *string   `json:"version"`
	Findings []Finding `json:"findings"`
}

// MarshalJSON encodes the report as
// {"version": "0.2" | null, "findings": [{id, status, legacy, v1, note,
// line, column, at: [{path, line, column}]}]}.
func (r *Report) MarshalJSON() ([]byte, error) {
	jr := jsonReport{Findings: r.Findings}
	if r.HasVersion {
		v := r.Version
		jr.Version = &v
	}
	if jr.Findings == nil {
		jr.Findings = []Finding{}
	}
	return json.Marshal(jr)
}

// WriteJSON writes the report as indented JSON followed by a newline.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}
