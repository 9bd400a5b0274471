package agent

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnavailable is matched (errors.Is) by every [UnavailableError]: the
// agent could not work at all, through no fault of the attempt.
var ErrUnavailable = errors.New("agent unavailable")

// UnavailableKind says why an agent cannot run.
type UnavailableKind string

// The kinds of unavailability, with the condition each stands for.
const (
	// UnavailableNotInstalled: the program is missing, a directory, or not
	// executable.
	UnavailableNotInstalled UnavailableKind = "not_installed"
	// UnavailableAuth: not logged in, an invalid or expired key or token,
	// an organisation that refuses the login.
	UnavailableAuth UnavailableKind = "not_logged_in"
	// UnavailableQuota: a usage limit, spend limit, rate limit, quota or
	// credit balance is exhausted.
	UnavailableQuota UnavailableKind = "quota_exceeded"
	// UnavailableNetwork: the model's service cannot be reached.
	UnavailableNetwork UnavailableKind = "no_network"
	// UnavailableService: the service answered that it is overloaded or
	// failing.
	UnavailableService UnavailableKind = "service_unavailable"
	// UnavailableModel: the model asked for does not exist or is not
	// available to this account.
	UnavailableModel UnavailableKind = "model_unavailable"
)

// what the user reads for each kind, and what to do about it.
var kindText = map[UnavailableKind][2]string{
	UnavailableNotInstalled: {"not installed", "install it or pass --agent '<command>'"},
	UnavailableAuth:         {"not logged in", "log in (claude: run `claude` and /login; codex: `codex login`), then resume the run"},
	UnavailableQuota:        {"usage limit or quota reached", "wait for the limit to reset or raise it, then resume the run"},
	UnavailableNetwork:      {"cannot reach its service", "check the network connection, then resume the run"},
	UnavailableService:      {"its service is unavailable", "try again later: resume the run"},
	UnavailableModel:        {"the model is not available", "choose another model, then resume the run"},
}

// UnavailableError reports that a connector could not run its agent at
// all (see [UnavailableKind]): the attempt never happened, so it must not be
// counted as one. A driver pauses the run so that it can be resumed once
// the condition is fixed. Connectors return it as Run's error, together
// with whatever Result (telemetry, stderr) the failed start produced.
type UnavailableError struct {
	// Agent is "claude", "codex" or the command's program.
	Agent string
	Kind  UnavailableKind
	// Reason is what the agent said, as printed (e.g. "Not logged in ·
	// Please run /login").
	Reason string
	// Err is the underlying error, if any (a *NotFoundError for a missing
	// program).
	Err error
}

func (e *UnavailableError) Error() string {
	if e.Kind == UnavailableNotInstalled && e.Err != nil {
		return e.Err.Error() // its hint already says what to do
	}
	text, ok := kindText[e.Kind]
	if !ok {
		text = [2]string{string(e.Kind), "fix it, then resume the run"}
	}
	msg := fmt.Sprintf("%s cannot run: %s", e.Agent, text[0])
	if r := strings.TrimSpace(e.Reason); r != "" {
		msg += " (" + r + ")"
	}
	return msg + "; " + text[1]
}

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

func (e *UnavailableError) Unwrap() error { return e.Err }

// The CLIs print infrastructure failures as text: Codex's JSON events carry
// only a message, and Claude's envelope too, when its stream gives no
// typed error. These phrases, lower-cased, are the ones the CLIs print
// (docs/agents.md, "When the agent cannot run", lists them with their
// sources). The order matters: the first kind with a match wins, so "401
// Unauthorized" inside a "stream disconnected" message is a login problem.
var phrases = []struct {
	kind UnavailableKind
	any  []string
}{
	{UnavailableAuth, []string{
		"not logged in", "please run /login", "run /login", "codex login", "claude auth login",
		"invalid api key", "incorrect api key", "invalid_api_key", "missing bearer",
		"401 unauthorized", "status 401", "403 forbidden", "status 403",
		"oauth token has expired", "oauth token expired", "oauth token revoked", "oauth token has been revoked",
		"token could not be refreshed", "refresh token", "authentication error",
		"disabled api key authentication", "belongs to a disabled organization",
	}},
	{UnavailableQuota, []string{
		"usage limit", "hit your limit", "hit your monthly spend limit", "spend limit", "quota exceeded",
		"insufficient_quota", "usage_limit_reached", "credit balance is too low",
		"429 too many requests", "status 429", "rate limit", "rate_limit",
	}},
	{UnavailableModel, []string{
		"model_not_found", "does not exist or you do not have access", "model is not supported",
		"unsupported model", "not_found_error",
	}},
	{UnavailableNetwork, []string{
		"unable to connect to api", "waiting for network", "stream disconnected before completion",
		"error sending request", "failed to lookup address", "dns error", "connection refused",
		"connectionrefused", "network is unreachable", "enotfound", "econnrefused", "fetch failed",
		"connection reset", "could not resolve host",
	}},
	{UnavailableService, []string{
		"overloaded", "500 internal server error", "502 bad gateway", "503 service unavailable",
		"504 gateway timeout", "status 500", "status 502", "status 503", "status 504",
	}},
}

// classifyText returns the kind of unavailability text describes, or "".
func classifyText(text string) UnavailableKind {
	t := strings.ToLower(text)
	for _, p := range phrases {
		for _, s := range p.any {
			if strings.Contains(t, s) {
				return p.kind
			}
		}
	}
	return ""
}

// classifyClaude classifies a failed Claude run. assistantError is the
// typed "error" of its last assistant message in the stream (the CLI's
// own classification: authentication_failed, billing_error, rate_limit,
// ...), apiStatus the envelope's api_error_status, text the envelope's
// result text or, without an envelope, its stderr.
func classifyClaude(assistantError string, apiStatus int, text string) UnavailableKind {
	switch assistantError {
	case "authentication_failed", "oauth_org_not_allowed":
		return UnavailableAuth
	case "billing_error", "rate_limit":
		return UnavailableQuota
	case "model_not_found":
		return UnavailableModel
	case "overloaded", "server_error":
		// server_error also stands for a service that cannot be reached.
		if classifyText(text) == UnavailableNetwork {
			return UnavailableNetwork
		}
		return UnavailableService
	case "invalid_request", "max_output_tokens":
		return "" // about this prompt or answer: a failed attempt
	}
	switch {
	case apiStatus == 401 || apiStatus == 403:
		return UnavailableAuth
	case apiStatus == 429:
		return UnavailableQuota
	case apiStatus == 404:
		return UnavailableModel
	case apiStatus == 529 || apiStatus >= 500:
		return UnavailableService
	}
	return classifyText(text)
}
