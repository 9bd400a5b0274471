package proc

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// dieWithParent makes the kernel send the child SIGKILL when its parent
// goes away (prctl PR_SET_PDEATHSIG). The kernel's "parent" is the thread
// that forked the child, not the process: hence startChild.
func dieWithParent(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGKILL
}

// The spawner is one goroutine locked to its OS thread for the life of the
// process; every child is forked from it. The parent-death signal fires
// when the forking thread exits, and the Go runtime ends a thread whenever
// a goroutine locked to it returns without unlocking (any library may do
// that), so a child forked from an arbitrary goroutine's thread could be
// killed at a random moment. The spawner's thread never exits: it is only
// ever the spawner's, and the spawner never returns. It is process-wide
// state by nature, since the threads are the process's.
var (
	spawnOnce sync.Once
	spawnReqs chan spawnReq
)

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

// startChild starts cmd from the spawner's thread.
func startChild(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnReqs = make(chan spawnReq)
		go spawner(spawnReqs)
	})
	r := spawnReq{cmd: cmd, done: make(chan error, 1)}
	spawnReqs <- r
	return <-r.done
}

func spawner(reqs <-chan spawnReq) {
	runtime.LockOSThread() // never unlocked: this thread must outlive every child
	for r := range reqs {
		r.done <- r.cmd.Start()
	}
}
