package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/stratum-go/stratum/engine"
	"github.com/stratum-go/stratum/store"
)

// schemaVersion is the _schema_version of the query, gate and flow cancel
// JSON documents (docs/cli.md, "stratum query").
const schemaVersion = "1"

// writeJSON writes v as two-space indented JSON and a newline (the form
// of the query, gate and flow cancel documents).
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// errorDoc is {"error": {"code", "message"}}.
type errorDoc struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// fail prints an error document on stdout and "stratum: message" on stderr
// and ends the command with status 1.
func fail(env *Env, code, message string) error {
	_ = writeJSON(env.Stdout, errorDoc{Error: errorBody{Code: code, Message: message}})
	fmt.Fprintf(env.Stderr, "stratum: %s\n", message)
	return exitCode(ExitFailure)
}

// checkRunID refuses an id that cannot name a run (an error, not "not
// found": docs/cli.md, "stratum query").
func checkRunID(env *Env, id string) error {
	if msg := runIDProblem(id); msg != "" {
		return fail(env, "INVALID", msg)
	}
	return nil
}

// runIDProblem says why id cannot name a run, or "" when it can.
func runIDProblem(id string) string {
	if store.ValidateRunID(id) == nil {
		return ""
	}
	return fmt.Sprintf("invalid run id %q: a run id is letters, digits and '-' (not first), as printed by stratum run and stratum query flows", id)
}

func isNotFound(err error) bool {
	return errors.Is(err, engine.ErrRunNotFound) || errors.Is(err, store.ErrRunNotFound)
}
