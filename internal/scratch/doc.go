// Package scratch makes the temporary files and directories Stratum needs
// outside a run's store (git's scratch indexes, an agent's last message)
// in a way that a SIGKILLed process does not leave them behind for good:
// each name carries the creating process's pid, and [Sweep] removes those
// of processes that are gone (docs/engine.md, "Effects").
package scratch
