package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"iter"
	"strconv"
)

// writeFlows prints a query flows listing exactly as writeJSON prints
// the slice of flows (two-space indented, HTML characters literal), but
// appended by hand into a buffered writer: encoding/json's reflection and
// re-indenting were an eighth of a 10,000-run listing's CPU
// (docs/engine.md, "Listings"). TestWriteFlowsMatchesWriteJSON holds the
// two to the same bytes. The flows are taken one at a time, as they are
// made, rather than from a slice of them all.
func writeFlows(w io.Writer, flows iter.Seq[flowSummary]) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	sep := "[\n"
	for f := range flows {
		bw.WriteString(sep)
		sep = ",\n"
		if _, err := bw.Write(appendFlow(bw.AvailableBuffer(), &f)); err != nil {
			return err
		}
	}
	if sep == "[\n" { // none
		bw.WriteString("[]\n")
	} else {
		bw.WriteString("\n]\n")
	}
	return bw.Flush()
}

// appendFlow appends one entry of the listing, indented as an element of
// the top-level array, without the separator after it.
func appendFlow(b []byte, f *flowSummary) []byte {
	b = append(b, "  {\n    \"_schema_version\": "...)
	b = appendJSONString(b, f.SchemaVersion)
	b = append(b, ",\n    \"flow_id\": "...)
	b = appendJSONString(b, f.FlowID)
	b = append(b, ",\n    \"flow_name\": "...)
	b = appendJSONString(b, f.FlowName)
	b = append(b, ",\n    \"status\": "...)
	b = appendJSONString(b, f.Status)
	b = append(b, ",\n    \"current_step_id\": "...)
	b = appendNullableString(b, f.CurrentStepID)
	b = append(b, ",\n    \"step_count\": "...)
	b = strconv.AppendInt(b, int64(f.StepCount), 10)
	b = append(b, ",\n    \"completed_steps\": "...)
	b = strconv.AppendInt(b, int64(f.CompletedSteps), 10)
	b = append(b, ",\n    \"round\": "...)
	b = strconv.AppendInt(b, int64(f.Round), 10)
	b = append(b, ",\n    \"terminal_status\": "...)
	b = appendNullableString(b, f.TerminalStatus)
	b = append(b, ",\n    \"synthetic\": "...)
	b = strconv.AppendBool(b, f.Synthetic)
	return append(b, "\n  }"...)
}

func appendNullableString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendJSONString(b, *s)
}

// appendJSONString appends s as a JSON string. Printable ASCII without
// '"' or '\' (ids, statuses, flow names) is copied; anything else is
// escaped by encoding/json itself, so every escape is the one writeJSON
// makes.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.Encode(s) // a string always encodes
			return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
