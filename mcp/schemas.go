package mcp

import (
	_ "embed"
	"encoding/json"
	"log/slog"
)

// The schemas every tool advertises are inferred from its Go types
// (schema.go), but inference and, above all, encoding *jsonschema.Schema
// values cost more than the whole rest of a server start (about 15 ms of
// CPU for the tools/list answer alone). schemas.json caches the result:
// each tool's input schema and open output schema, exactly as encoded
// from the inferred schemas, advertised as raw JSON. It is generated:
// `go test ./mcp -run TestSchemaCache -update` rewrites it, and
// TestSchemaCache fails whenever it differs from the inference, so the Go
// types stay the one source of truth.

//go:embed schemas.json
var schemaCacheJSON []byte

// cachedTool is one tool's cached schemas.
type cachedTool struct {
	Input  json.RawMessage `json:"input"`
	Output json.RawMessage `json:"output"`
}

// loadSchemaCache decodes the cache. A damaged cache (which the tests
// rule out) only costs the start-up time: every tool falls back to
// inference.
func loadSchemaCache(log *slog.Logger) map[string]cachedTool {
	var m map[string]cachedTool
	if err := json.Unmarshal(schemaCacheJSON, &m); err != nil {
		log.Error("schema cache unreadable; inferring every schema", "err", err)
		return nil
	}
	return m
}

func (s *server) cachedSchemas(name string) (cachedTool, bool) {
	c, ok := s.cache[name]
	return c, ok && len(c.Input) > 0 && len(c.Output) > 0
}
