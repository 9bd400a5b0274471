// Package judge is the interface between Stratum and whatever decides
// criteria that only a model can judge: the guard's `verified`/`judged`
// edge predicates (docs/guard.md, "The LLM tier and the judge") and the
// engine's judged ensures.
//
// A [Judge] receives a criterion (natural-language text), the stakes of the
// decision and a JSON context ([Request]), and answers whether the criterion
// holds and why ([Verdict]). [CommandJudge] runs an operator-configured program
// as a child process (JSON request on stdin, JSON verdict on stdout), so any
// model backend can be plugged in without Stratum holding API keys. With no
// judge configured, callers must fail closed (the guard refuses, never
// applies).
//
// judge imports only internal/proc of the module. guard and engine call a
// Judge and cli builds one from the environment ([FromEnv]); none of them is
// imported by judge.
package judge
