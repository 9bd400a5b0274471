package mcp

import (
	"context"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAnnotationsFollowPolicy: the hints a client lists are true of the
// policy the server was built with (docs/policy.md, "What the
// annotations say").
func TestAnnotationsFollowPolicy(t *testing.T) {
	f := newFixture(t)
	listed := func(e Effects) map[string]*sdk.ToolAnnotations {
		t.Helper()
		srv, err := buildServer(Deps{Engine: f.eng, Guard: f.guard, Effects: e}, true)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		st, ct := sdk.NewInMemoryTransports()
		ss, err := srv.Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { cs.Close(); ss.Wait() }()
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*sdk.ToolAnnotations{}
		for _, tl := range res.Tools {
			out[tl.Name] = tl.Annotations
		}
		return out
	}
	none := listed(Effects{})
	for name := range advancingTools {
		if none[name] == nil {
			t.Errorf("advancingTools names %s, which the server does not list", name)
		}
	}
	for name := range guardEvidenceTools {
		if none[name] == nil {
			t.Errorf("guardEvidenceTools names %s, which the server does not list", name)
		}
	}
	for name, a := range none {
		if *a.OpenWorldHint {
			t.Errorf("no effects allowed, yet %s is open-world", name)
		}
	}
	for _, tc := range []struct {
		name    string
		effects Effects
		acting  map[string]bool // tools that may act on the machine
		open    map[string]bool // tools that may reach outside
	}{
		{"commands", Effects{Commands: true}, advancingTools, advancingTools},
		{"agents", Effects{Agents: true}, advancingTools, advancingTools},
		{"guard commands", Effects{GuardCommands: true}, guardEvidenceTools, guardEvidenceTools},
		{"judge", Effects{Judge: true}, nil, union(advancingTools, guardEvidenceTools)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for name, a := range listed(tc.effects) {
				base := none[name]
				switch {
				case tc.acting[name]:
					if a.ReadOnlyHint || a.IdempotentHint || !*a.DestructiveHint || !*a.OpenWorldHint {
						t.Errorf("%s may run commands or agents, yet is annotated %+v", name, a)
					}
				case tc.open[name]:
					if !*a.OpenWorldHint || a.ReadOnlyHint != base.ReadOnlyHint || *a.DestructiveHint != *base.DestructiveHint {
						t.Errorf("%s may ask the judge: want open-world and otherwise unchanged, got %+v", name, a)
					}
				default:
					if *a.OpenWorldHint || a.ReadOnlyHint != base.ReadOnlyHint || a.IdempotentHint != base.IdempotentHint || *a.DestructiveHint != *base.DestructiveHint {
						t.Errorf("%s causes no effect, yet its annotations changed: %+v", name, a)
					}
				}
			}
		})
	}
}

func union(a, b map[string]bool) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}
