// Package policy is the effects policy of whoever starts Stratum: which
// effects a spec may cause (running a command, the engine starting an
// agent and with how much write access, reading workspace files, asking
// the judge), the longest time limit a command may declare, the longest
// time limit of an agent attempt ([Policy.AgentTimeout]), and the
// directories a run's workspace root must lie inside (docs/policy.md).
//
// A spec is written by a model and may carry a prompt injection, so it
// never decides its own permissions: a [Policy] is built only from what
// the person gave the command that started Stratum — its flags ([Flags])
// and a policy file whose path they named with --policy — never from the
// spec, the arguments of a tool call or a working directory a model
// controls. [Policy] implements engine.Policy: the engine asks it at plan
// time about every effect of a spec and about the workspace root, and
// again before each command and agent starts.
//
// The defaults depend on who is on the other side ([Mode]): under
// `stratum mcp` ([Server]) a model drives the run, so commands and agent
// dispatch are off until the person turns them on; under the commands a
// person types ([Person]: `stratum run`, `stratum gate`, ...) agents are
// on (the person asked for a run with agents) and commands stay off until
// --allow-commands. Reading workspace files and asking the judge the
// person configured are on in both. Every refusal says which step, which
// effect, and the flag or policy-file line that would allow it.
//
// policy imports engine (the Effect it judges), yaml.v3 and
// internal/yamlerr (to place a syntax error of the policy file), nothing
// of cli or mcp.
package policy
