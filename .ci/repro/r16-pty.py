import os, pty, sys, time, select
run=sys.argv[1]
pid, fd = pty.fork()
if pid==0:
    os.execv("/tmp/stratum", ["stratum","run","--resume",run,"--agent","./agent.sh","--gate","ask"])
out=b""
def readfor(t):
    global out
    end=time.time()+t
    while time.time()<end:
        r,_,_=select.select([fd],[],[],0.2)
        if r:
            try: d=os.read(fd,4096)
            except OSError: return
            if not d: return
            out+=d
readfor(3); print(out.decode(errors="replace")[-1500:]); print("=== sending 'revise' (not offered?)")
os.write(fd,b"revise\n"); readfor(1.5); print(out.decode(errors="replace")[-600:])
print("=== sending 'approve'"); os.write(fd,b"approve\n"); readfor(1.5); print(out.decode(errors="replace")[-400:])
print("=== sending note"); os.write(fd,b"looks good now\n"); readfor(3); print(out.decode(errors="replace")[-500:])
_,st=os.waitpid(pid,0); print("exit", os.WEXITSTATUS(st))
