// Command quickstart-agent is a stand-in agent for trying Stratum without a
// model: `stratum run FLOW.yaml --agent 'go run
// ./examples/agents/quickstart-agent'` (or a built binary). It speaks the
// command-agent protocol of docs/agents.md: it reads one JSON request on
// stdin and prints the step output as one JSON value on stdout.
//
// It answers any step by filling the step's output contract with plausible
// values, in the contract's field order:
//
//   - string: a short text naming the field and the task;
//   - number: 0.9; integer: 1; boolean: true;
//   - an enum ("a|b"): its first member;
//   - T[]: one element of T; array: one string; object: {};
//   - another contract's name: an object filled the same way;
//   - optional fields (T?) are filled like T.
//
// A step without a contract gets a JSON string saying the task is done.
//
// On purpose, it answers WRONG on attempt 1 of the step whose id is
// "draft": every number is 0.2 instead of 0.9, so an ensure such as
// `result.confidence >= 0.8` fails, and the user sees Stratum retry the
// step with the failure in previousFailure (which this agent reports on
// stderr before answering correctly).
//
// It also improves when told to: when the previous attempt was sent back
// by an iterate condition (its previousFailure starts with "iterate
// until"), every number is 0.99, so a loop such as `until: "result.quality
// >= 0.95"` (examples/iterate.stratum.yaml) ends on its second iteration.
//
// It uses only the standard library, so it builds anywhere Go does.
package main
