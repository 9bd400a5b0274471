// Package ir owns Stratum's v1 spec language: it loads a YAML spec with
// positions, validates it strictly (every problem at once, each a positioned
// [Diagnostic] with the reference's error code and path, or one of this
// port's: YAML_*, EXPR_SYNTAX), and compiles a valid spec into an immutable
// [Plan] that the engine runs. docs/spec-language.md is the language and the
// order of the checks; docs/decisions/0002 and 0020 record where ir departs
// from the reference.
//
// # Entry points
//
// [Build] loads, validates and compiles; [Validate] only validates. A Plan
// carries everything the engine needs without re-parsing: steps in
// declaration order with typed fields ([Step], [StepKind], and named string
// types such as [Isolation] and [Dispatch] for enum-like fields), dependency
// and routing edges, a topological order, route-only steps, revise reset
// closures ([Flow.ResetClosure]), the parsed ${...} reference sites
// ([Site], [Template.Render]), the expression each ensure evaluates
// ([Ensure.Expression]), and contracts resolved to types that validate JSON
// values ([Contract.Validate], [Type.Validate]).
//
// # Map of the files
//
// The pipeline is load -> structure -> semantics -> compile:
//
//   - build.go: Build, Validate, and compiling a checked spec into a Plan.
//   - load.go: bounded loading with yaml.v3 into the positioned tree (node),
//     YAML 1.2 core scalars, the reference's key naming; fastyaml.go: the
//     fast path for the YAML specs are written in; fastjson.go: the fast
//     path for JSON, the form of a run's persisted spec snapshot (see below).
//   - structure.go: the validator's state and the structural checks of the
//     document, contracts, flows and carry; step.go: the step field table
//     and one check per step field, then the construct rules; construct.go:
//     gate, fanout and its stages, evaluate, with; ensure.go: ensure
//     predicates and the expressions file predicates stand for; leaf.go: the
//     strings scanned for references and lazily built locations.
//   - semantic.go: the semantic phase's order, contracts and types, subflow
//     calls, the step table, output.from; edges.go: edges and reference
//     checks; graph.go: the step graph (cycles, reachability, topological
//     order); carry.go: carry variables; graphrules.go: consumer-worktree
//     fanouts and revise targets; exprcheck.go: parsing every expression
//     (EXPR_SYNTAX) and its hints.
//   - refs.go: the ${...} grammar, templates and rendering; types.go: the
//     type language and value validation; plan.go: the Plan's types;
//     document.go: the loaded document as a JSON value; diag.go: codes and
//     diagnostics.
//
// # Why the fast paths exist
//
// Validation runs on every plan and every stratum_validate call, and a
// model may send specs of thousands of steps, so ir is built to cost a small
// fraction of one MCP round trip (the benchmarks in bench_test.go guard it).
// Four places trade simplicity for that:
//
//   - fastyaml.go parses the subset of YAML specs use straight into the tree,
//     several times faster than yaml.v3, which alone took about 22 ms for a
//     1000-step spec; it gives up on anything else, yaml.v3 stays the
//     authority, and a differential test and FuzzFastYAML require both to
//     give the same tree and positions (docs/decisions/0002).
//   - fastjson.go does the same for JSON documents: a run's spec snapshot,
//     which every other process reading the run (an audit, a second
//     server) compiles again, is compact JSON that yaml.v3 took about
//     0.13 s to parse at 10,000 steps; FuzzFastJSON and the differential
//     tests require the same tree, plan and diagnostics as yaml.v3's path.
//   - the step field table is looked up through a small collision-free hash,
//     because every key of every step is looked up; diagnostic paths are
//     built only when a diagnostic needs one (loc, pathPart); templates,
//     references, leaves and edge lists are carved from shared arenas.
//   - the graph checks (cycles, revise and carry ancestry) answer all their
//     questions in passes linear in the flow, so that a hostile spec cannot
//     make validation quadratic.
//
// Compiling each distinct expression once is the cost of EXPR_SYNTAX
// (docs/decisions/0020).
//
// ir imports expr (the JSON value model and the expression parser) and
// internal/yamlerr (YAML error positions). It must not import engine, store,
// cli or mcp: it knows nothing of runs. It does no I/O.
package ir
