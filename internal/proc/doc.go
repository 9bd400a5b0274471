// Package proc runs one external program as a child process with bounded
// resources: an explicit argv (no shell unless the caller passes one), a
// working directory, an environment, stdin bytes, a time limit and context
// cancellation that end the child's whole process group (SIGTERM, then
// SIGKILL after a grace period, then reap), stdout captured up to a byte
// limit, the tail of stderr (and optionally a live copy of it), the exit
// status and the duration.
//
// It is the one place in the module that spawns processes for agents, guard
// evidence commands, engine-run commands and judges, so that every caller
// gets the same teardown guarantees: when Run returns, the child and
// everything it left in its process group have been signalled and the child
// has been reaped; no memory grows with what the child prints.
//
// On Linux the group is signalled while the leader is still an unreaped
// zombie, so its process-group id cannot have been recycled. Other Unix
// systems signal the group right after reaping (a narrow recycling window).
// Non-Unix systems kill only the child itself.
//
// # Children die with their parent (Linux)
//
// A child must not outlive the process that started it, even when that
// process is killed outright (SIGKILL, the OOM killer), because nobody
// would then stop it: a resumed run would start a second agent on the same
// step. Two mechanisms cover it (docs/agents.md, "When Stratum dies"):
//
//   - Every child gets SIGKILL as its parent-death signal. The kernel sends
//     it when the thread that forked the child exits, not the process, so
//     every child is forked from one goroutine locked to its OS thread for
//     the life of the process (the spawner), whose thread never exits.
//   - A watchdog process, started once on the first Run (the same
//     executable, re-run with a marker this package's init recognises),
//     reads a pipe that only the parent writes. However the parent dies the
//     pipe closes; the watchdog then kills every process group still
//     registered (reaching the child's own children, which the
//     parent-death signal does not) and removes every [Spec.TempPaths] entry
//     still registered.
//
// Not covered: a process that left the child's group (setsid, or a new
// group of its own) is not tracked; when the watchdog is killed together
// with its parent (a SIGKILL sent to both), only the parent-death signal is
// left, so the child dies but what it started in its group and its
// temporary paths stay. The spawner and the watchdog are process-wide by
// nature (the threads and the parent are the process's), the only state of
// the package.
//
// An [Identity] (pid, start time, boot id) recorded through [Spec.OnStart]
// lets another process stop a child's group later with [KillGroup], which
// signals it only if that very process still runs.
//
// proc imports nothing of the module.
package proc
