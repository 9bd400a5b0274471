package guard

import (
	"context"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/stratum-go/stratum/guard/internal/canon"
	"github.com/stratum-go/stratum/guard/internal/evidence"
	"github.com/stratum-go/stratum/guard/internal/ledger"
	"github.com/stratum-go/stratum/judge"
)

const (
	summaryEvidence   = "guard transition verdict"
	summaryNoVerifier = "LLM-tier predicates present but no verifier available"
	summaryReplayed   = "replayed idempotent transition"
)

// edgeSnapshot is what phase 2 evaluates, copied under the lock in phase 1
// so that no lock is held during slow work.
type edgeSnapshot struct {
	resourceID    string
	edge          string
	stake         string
	predicates    []map[string]any
	workspaceRoot string
	log           *ledger.Log
	artifacts     map[string]any
	modifiedFiles []string
}

type trustedResult struct {
	id        any // the predicate's id, or nil
	verdictID string
	statement any
	res       evidence.Result
}

type llmResult struct {
	verdictID string
	typ       string
	statement any
	holds     bool
	judged    bool
	verdict   judge.Verdict
}

func (g *Guard) commandTimeout() time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(g.getenv(EnvCommandTimeout)))
	if err != nil || n <= 0 {
		return evidence.DefaultCommandTimeout
	}
	return time.Duration(n) * time.Second
}

func predicateID(p map[string]any, prefix string, index int) string {
	if s, ok := p["id"].(string); ok && s != "" {
		return s
	}
	return prefix + strconv.Itoa(index)
}

// evaluate runs phase 2: every trusted predicate in declaration order,
// then (only if they all hold) the judge on each LLM-tier predicate. It
// returns whether the edge's predicates are met and the verdict object.
func (g *Guard) evaluate(ctx context.Context, s *edgeSnapshot) (bool, map[string]any) {
	env := evidence.Env{
		WorkspaceRoot:  s.workspaceRoot,
		AllowCommands:  g.allowCommands(),
		CommandTimeout: g.commandTimeout(),
		CleanReceipt:   s.log.HasCleanReceipt,
	}
	var trusted []trustedResult
	var llm []llmResult
	for _, p := range s.predicates {
		typ, err := predicateType(p)
		if err != nil {
			// Registration refuses unknown types; a stored policy that has
			// one anyway counts as an unmet trusted predicate.
			trusted = append(trusted, trustedResult{id: p["id"], verdictID: predicateID(p, "e", len(trusted)), statement: p["statement"],
				res: evidence.Result{Evidence: err.Error()}})
			continue
		}
		if typ != TypeDeterministic {
			llm = append(llm, llmResult{verdictID: predicateID(p, "j", len(llm)), typ: typ, statement: p["statement"]})
			continue
		}
		tr := trustedResult{id: p["id"], verdictID: predicateID(p, "e", len(trusted)), statement: p["statement"]}
		if call, err := evidence.Parse(statementOf(p)); err != nil {
			tr.res = evidence.Result{Evidence: err.Error()}
		} else {
			tr.res = evidence.Evaluate(ctx, call, env)
		}
		trusted = append(trusted, tr)
	}
	trustedMet := true
	for _, t := range trusted {
		trustedMet = trustedMet && t.res.Met
	}

	summary := summaryEvidence
	llmMet := true
	usedJudge := false
	switch {
	case len(llm) == 0:
	case !trustedMet:
		// The transition is refused whatever the judge says: do not spend a
		// model call on it.
		llmMet = false
		for i := range llm {
			llm[i].verdict.Reason = "not judged: trusted evidence not met"
		}
	case g.judge == nil:
		llmMet = false
		summary = summaryNoVerifier
		for i := range llm {
			llm[i].verdict.Reason = "no verifier available"
		}
	default:
		usedJudge = true
		judgeContext := map[string]any{"result": map[string]any{
			"resource_id": s.resourceID, "edge": s.edge, "artifacts": s.artifacts, "modified_files": s.modifiedFiles,
		}}
		var reasons []string
		for i := range llm {
			stmt, _ := llm[i].statement.(string)
			if stmt == "" && llm[i].statement != nil {
				stmt = jsString(llm[i].statement)
			}
			v, err := g.judge.Judge(ctx, judge.Request{Criterion: stmt, Stakes: s.stake, Context: judgeContext})
			llm[i].judged = true
			if err != nil {
				v = judge.Verdict{Holds: false, Reason: "judge failed: " + err.Error()}
			}
			llm[i].verdict = v
			llm[i].holds = v.Holds
			llmMet = llmMet && v.Holds
			if v.Reason != "" {
				reasons = append(reasons, v.Reason)
			}
		}
		if len(reasons) > 0 {
			summary = strings.Join(reasons, "; ")
		}
	}
	met := trustedMet && llmMet
	return met, buildVerdict(met, s.stake, summary, trusted, llm, usedJudge || (len(llm) > 0 && g.judge == nil && trustedMet))
}

// buildVerdict assembles the verdict object (docs/guard.md, "The verdict").
func buildVerdict(met bool, stake, summary string, trusted []trustedResult, llm []llmResult, judgeSource bool) map[string]any {
	preds := make([]any, 0, len(trusted)+len(llm))
	evidenceList := make([]any, 0, len(trusted))
	for _, t := range trusted {
		preds = append(preds, predicateVerdict(t.verdictID, TypeDeterministic, t.statement, t.res.Met, 10))
		evidenceList = append(evidenceList, map[string]any{"id": t.id, "statement": t.statement, "met": t.res.Met, "evidence": t.res.Evidence})
	}
	judged := 0
	var judgeResults []any
	for _, l := range llm {
		conf := 0
		if l.holds {
			conf = 10
		}
		preds = append(preds, predicateVerdict(l.verdictID, l.typ, l.statement, l.holds, conf))
		if l.judged {
			judged++
		}
		judgeResults = append(judgeResults, map[string]any{
			"holds": l.holds, "reason": l.verdict.Reason, "stakes": stake, "model": l.verdict.Model,
			"usage": map[string]any{"tokens": l.verdict.Usage.Tokens},
		})
	}
	meta := map[string]any{"agent_type": "guard", "guard_evidence": evidenceList, "source": "evidence"}
	if judgeSource {
		meta["source"] = "judge"
		meta["judge_results"] = judgeResults
	}
	return map[string]any{
		"clean": met, "met": met, "summary": summary, "findings": []any{}, "meta": meta,
		"consensus": []any{}, "claude_only": []any{}, "codex_only": []any{}, "lenses_run": []any{},
		"auto_fixes": []any{}, "asks": []any{}, "judge_version": "1.0", "stakes": stake,
		"predicates": preds, "tier_disagreements": []any{},
		"budget_consumed":   map[string]any{"dollars": 0, "turns": judged, "wall_clock_s": 0},
		"judge_kernel_meta": map[string]any{"decomposer_mode": "user", "degraded_judged": false, "smartmemory_priors_consulted": 0},
	}
}

func predicateVerdict(id, typ string, statement any, met bool, confidence int) map[string]any {
	v := "not_met"
	if met {
		v = "met"
	}
	return map[string]any{
		"id": id, "type": typ, "statement": statement, "verdict": v, "confidence": confidence,
		"applied_gate": 0, "evidence": []any{}, "tier_history": []any{}, "t3": nil,
	}
}

// replayVerdict synthesises a minimal verdict for a replayed entry that
// stored none.
func replayVerdict(applied bool) map[string]any {
	return buildVerdict(applied, "default", summaryReplayed, nil, nil, false)
}

// normalize makes a verdict canonical-JSON safe: numbers rounded to the
// nearest integer (non-finite to 0, clamped to the safe range), strings
// made valid UTF-8, and values outside JSON replaced by null.
func normalize(v any) any {
	switch x := v.(type) {
	case nil, bool:
		return x
	case string:
		return strings.ToValidUTF8(x, "\uFFFD")
	case float64:
		return roundSafe(x)
	case float32:
		return roundSafe(float64(x))
	case int:
		return roundSafe(float64(x))
	case int64:
		return roundSafe(float64(x))
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if !utf8.ValidString(k) {
				k = strings.ToValidUTF8(k, "\uFFFD")
			}
			out[k] = normalize(e)
		}
		return out
	}
	if b, err := canon.Marshal(v); err == nil {
		if d, err := canon.Decode(b); err == nil {
			return normalize(d)
		}
	}
	return nil
}

func roundSafe(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return int64(0)
	}
	f = math.Round(f)
	f = math.Max(-canon.MaxSafeInteger, math.Min(canon.MaxSafeInteger, f))
	return int64(f) // -0 becomes 0
}
