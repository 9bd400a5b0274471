package mcp

import (
	"context"
	"encoding/json"

	"github.com/stratum-go/stratum/guard"
)

// The guard tools (guard_*.go) are adapters onto package guard: its
// request structs are the input schemas (their JSON tags are the wire
// names) and guard.DecodeRequest reads the arguments, exactly as
// `stratum guard` does, so both front ends accept the same requests.
// A *guard.Error is a refusal with the guard's code (errorBody).

// guardTool registers one guard method as a tool.
func guardTool[In, Out any](s *server, m toolMeta, method func(*guard.Guard, context.Context, In) (*Out, error)) tool {
	decode := func(args json.RawMessage) (In, error) {
		var in In
		err := guard.DecodeRequest(args, &in)
		return in, err
	}
	return newToolDecoding(s, m, decode, func(ctx context.Context, _ *call, in In) (*Out, error) {
		return method(s.guard, ctx, in)
	})
}

// guardTools lists the guard tools, or none when the server has no guard.
func (s *server) guardTools() []tool {
	if s.guard == nil {
		return nil
	}
	return []tool{
		s.guardRegisterTool(),
		s.guardTransitionTool(),
		s.guardHistoryTool(),
		s.guardOverrideTool(),
		s.guardUpgradeTool(),
		s.guardApplyUpgradeTool(),
		s.guardMigrateTool(),
	}
}
