package pgtest

import "syscall"

// quitWithParent has the kernel send the server SIGQUIT (immediate
// shutdown) if this binary dies without stopping it.
func quitWithParent(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGQUIT }
