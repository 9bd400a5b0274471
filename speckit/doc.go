// Package speckit compiles a GitHub spec-kit tasks directory (one markdown
// file per task) into a Stratum v1 spec.
//
// Each direct child of the directory whose name ends in ".md" is a task, in
// file-name order. A task file's first heading is its title ("[P]" anywhere
// in it marks a task that may run in parallel with its neighbours), the text
// up to an "Acceptance Criteria" heading is its description, and the
// checklist items after that heading are its criteria. Criteria of the known
// forms become ensure predicates ("file X exists", "file X contains "Y"",
// "tests pass", "no lint errors"); the rest are appended to the task text
// for the agent to honour. Tasks run in file order; consecutive [P] tasks
// share their predecessor and the next sequential task waits for all of
// them.
//
// The emitted spec is validated with package [ir] before it is returned, so
// the compiler never hands out a document that `stratum validate` rejects.
// [Compile] is the Go entry point; [CompileTool] is the same operation with
// the request and response shapes of the MCP tool stratum_compile_speckit
// ([Request], [Response]).
//
// speckit imports ir (to validate its output) and nothing else of the
// module; it must not import engine, store, cli or mcp.
package speckit
