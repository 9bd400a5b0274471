// Package ir owns Stratum's v1 spec language: it loads a YAML spec with
// positions, validates it strictly (every problem at once, each a positioned
// Diagnostic with the reference's error code and path), and compiles a valid
// spec into an immutable Plan that the engine runs.
//
// The pipeline is Build: YAML bytes -> positioned tree (bounded in size,
// nesting and alias expansion; plain block YAML takes a fast path, anything
// else goes through gopkg.in/yaml.v3, the authority) -> structural check (field names, value types,
// ranges, one construct per step) -> semantic check (contract types,
// ${...} references, the step graph, routing, subflows, carry) -> Plan.
//
// The Plan carries everything the engine needs without re-parsing: steps in
// declaration order with typed fields, dependency and routing edges, a
// topological order, route-only steps, revise reset closures, the parsed
// ${...} reference sites, and contracts resolved to Types that validate JSON
// values (Contract.Validate, Type.Validate).
//
// ir imports expr only for the JSON value model (and, in time, the
// expression parser). It must not import engine, store, cli or mcp: it knows
// nothing of runs.
package ir
