// Package cputime reads the CPU time this process has used, in user space
// and in the kernel, on every platform the project builds for: the
// benchmarks report CPU per operation beside wall time (docs/engine.md,
// "Benchmarks"), and a figure that silently read zero on one platform
// would pass for a free operation.
package cputime
