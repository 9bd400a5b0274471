package eventtext

import (
	"bytes"
	"encoding/json"

	"github.com/stratum-go/stratum/engine"
)

// attemptOf is the attempt of a ready or result event. Almost every step
// of a run logs one of each, their details {"attempt":N} and
// {"attempt":N,"result":V}, and the attempt is all a description reads of
// them: those two forms are read here, without decoding the result
// (json.Unmarshal building results only to drop them was 8% of a long
// run's text audit; docs/cli.md, "stratum audit"). Any other detail is
// decoded into the engine's type, as before. TestAttemptOf and
// FuzzAttemptOf hold the two readings to the same attempt.
func attemptOf(ev engine.Event) int {
	if n, ok := plainAttempt(ev.Detail); ok {
		return n
	}
	var d engine.ReadyDetail
	_ = ev.DecodeDetail(&d)
	return d.Attempt
}

// plainAttempt reads N from {"attempt":N} or {"attempt":N,"result":V},
// N a non-negative integer that fits an int, V any valid JSON value; ok
// is false for any other detail.
func plainAttempt(detail []byte) (n int, ok bool) {
	const head, result = `{"attempt":`, `,"result":`
	if !bytes.HasPrefix(detail, []byte(head)) || detail[len(detail)-1] != '}' {
		return 0, false
	}
	rest := detail[len(head) : len(detail)-1]
	digits := 0
	for digits < len(rest) && rest[digits] >= '0' && rest[digits] <= '9' {
		digits++
	}
	if digits == 0 || digits > 18 || digits > 1 && rest[0] == '0' {
		return 0, false // none, too many for an int, or a leading zero (not JSON)
	}
	for _, c := range rest[:digits] {
		n = n*10 + int(c-'0')
	}
	switch tail := rest[digits:]; {
	case len(tail) == 0:
		return n, true
	case bytes.HasPrefix(tail, []byte(result)) && json.Valid(tail[len(result):]):
		return n, true
	}
	return 0, false
}
