// Package proc runs one external program as a child process with bounded
// resources: an explicit argv (no shell unless the caller passes one), a
// working directory, an environment, stdin bytes, a time limit and context
// cancellation that end the child's whole process group (SIGTERM, then
// SIGKILL after a grace period, then reap), stdout captured up to a byte
// limit, the tail of stderr, the exit status and the duration.
//
// It is the one place in the module that spawns processes for agents, guard
// evidence commands and engine-run commands, so that every caller gets the
// same teardown guarantees: when Run returns, the child and everything it
// left in its process group have been signalled and the child has been
// reaped; no memory grows with what the child prints.
//
// On Linux the group is signalled while the leader is still an unreaped
// zombie, so its process-group id cannot have been recycled. Other Unix
// systems signal the group right after reaping (a narrow recycling window).
// Non-Unix systems kill only the child itself.
//
// proc imports nothing of the module.
package proc
