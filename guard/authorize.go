package guard

import (
	"context"
	"fmt"
)

// AuthorizeRequest asks for the exact payload to sign for an override or a
// migrate (`stratum guard authorize`).
type AuthorizeRequest struct {
	Kind              string         `json:"kind" jsonschema:"override or migrate"`
	ResourceID        string         `json:"resource_id"`
	Rationale         string         `json:"rationale"`
	FromState         string         `json:"from_state,omitempty"`
	ToState           string         `json:"to_state,omitempty"`
	NewGraph          map[string]any `json:"new_graph,omitempty"`
	NewEdgePredicates map[string]any `json:"new_edge_predicates,omitempty"`
	NewTerminal       any            `json:"new_terminal,omitempty"`
	NewStakes         any            `json:"new_stakes,omitempty"`
}

// AuthorizeResult is the payload to sign and how.
type AuthorizeResult struct {
	Status string `json:"status"`
	// Warning says plainly when no signature can be accepted at all (the
	// compiled trust root lists no signer, or is unusable), so that
	// nobody signs a payload that can never be spent.
	Warning      string   `json:"warning,omitempty"`
	Namespace    string   `json:"namespace"`
	Payload      string   `json:"payload"`
	Instructions []string `json:"instructions"`
	Note         string   `json:"note"`
}

// Authorize computes, without changing or granting anything, the exact
// payload an override or migrate signature must cover: it binds the
// resource, the edge or resulting policy checksum, the rationale and the
// current ledger head ("" for a resource with no ledger entries, or none
// at all).
func (g *Guard) Authorize(ctx context.Context, req AuthorizeRequest) (*AuthorizeResult, error) {
	if err := validateResourceID(req.ResourceID); err != nil {
		return nil, err
	}
	if blank(req.Rationale) {
		return nil, errorf(CodeOverrideUnavailable, "a signed action needs a non-empty rationale")
	}
	head := ""
	r, err := g.loadForRead(ctx, req.ResourceID)
	switch {
	case err == nil:
		head = r.Log.Head
	case CodeOf(err) != CodeNotFound:
		return nil, err
	}
	var payload []byte
	var namespace string
	switch req.Kind {
	case KindOverride:
		if req.FromState == "" || req.ToState == "" {
			return nil, errorf(CodeInvalidArgument, "an override authorization needs from_state and to_state")
		}
		namespace = NamespaceOverride
		payload, err = overridePayload(req.ResourceID, req.FromState, req.ToState, req.Rationale, head)
	case KindMigrate:
		if req.NewGraph == nil || req.NewEdgePredicates == nil {
			return nil, errorf(CodeInvalidArgument, "a migrate authorization needs new_graph and new_edge_predicates")
		}
		sum, cerr := inputChecksum(PolicyInput{Graph: req.NewGraph, EdgePredicates: req.NewEdgePredicates, Terminal: req.NewTerminal, Stakes: req.NewStakes})
		if cerr != nil {
			return nil, cerr
		}
		namespace = NamespaceMigrate
		payload, err = migratePayload(req.ResourceID, sum, req.Rationale, head)
	default:
		return nil, errorf(CodeInvalidArgument, "kind must be override or migrate, not %q", req.Kind)
	}
	if err != nil {
		return nil, errorf(CodeInvalidArgument, "payload: %v", err)
	}
	return &AuthorizeResult{
		Status:    "ok",
		Warning:   g.trustWarning(),
		Namespace: namespace,
		Payload:   string(payload),
		Instructions: []string{
			"Write the payload to a file exactly as given, with no trailing newline (for example: printf '%s' \"$PAYLOAD\" > payload.json).",
			"Sign it with a key listed in the trust root: ssh-keygen -Y sign -f <private key> -n " + namespace + " payload.json (this writes payload.json.sig).",
			"Pass the full text of payload.json.sig as \"authorization\" to " + req.Kind + " with exactly the same arguments.",
		},
		Note: "The payload binds the current ledger head: it is valid only until the resource's ledger changes. Any other mutation of the resource invalidates it; sign and spend it promptly.",
	}, nil
}

// trustWarning is AuthorizeResult.Warning: non-empty when the trust root
// compiled into this binary can accept no signature.
func (g *Guard) trustWarning() string {
	trust, err := g.trustRoot()
	switch {
	case err != nil:
		return fmt.Sprintf("no signature can be accepted: the trust root compiled into this stratum binary is unusable (%v); fix guard/guard-signers.allowed and rebuild (docs/guard.md, \"Operator workflow\")", err)
	case len(trust.Signers()) == 0:
		return "no signature can be accepted: the trust root compiled into this stratum binary lists no signer, so this payload cannot be spent until an operator enrols a key in guard/guard-signers.allowed and rebuilds stratum (docs/guard.md, \"Operator workflow\")"
	}
	return ""
}
