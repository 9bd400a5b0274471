import sys, json, os, time, threading, subprocess
env=dict(os.environ, STRATUM_HOME="/tmp/nc/e7/home")
p=subprocess.Popen(["/tmp/stratum","mcp"],stdin=subprocess.PIPE,stdout=subprocess.PIPE,stderr=subprocess.DEVNULL,env=env,cwd="/tmp/nc/e7")
def w(m): p.stdin.write((json.dumps(m)+"\n").encode())
w({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"0"}}})
w({"jsonrpc":"2.0","method":"notifications/initialized"}); p.stdin.flush()
N=int(sys.argv[1]) if len(sys.argv)>1 else 20000
written=[0]
def writer():
    for i in range(1,N+1):
        m = {"jsonrpc":"2.0","id":i,"method":"tools/list"} if i%int(sys.argv[2] if len(sys.argv)>2 else 1)==0 else {"jsonrpc":"2.0","id":i,"method":"ping"}
        w(m); written[0]=i
    p.stdin.flush(); p.stdin.close()
def hwm():
    for l in open(f"/proc/{p.pid}/status"):
        if l.startswith("VmHWM"): return l.split()[1]+" kB"
t=threading.Thread(target=writer,daemon=True); t.start()
prev=-1
for _ in range(60):
    time.sleep(0.5)
    if written[0]==prev: break
    prev=written[0]
print("writer stalled at request", written[0], "of", N, "(not reading); server VmHWM", hwm())
peak=[hwm()]
def samp():
    while p.poll() is None:
        try: peak[0]=hwm()
        except Exception: pass
        time.sleep(0.2)
threading.Thread(target=samp,daemon=True).start()
t0=time.time(); n=0; ids=set()
for l in p.stdout:
    n+=1; m=json.loads(l); ids.add(m.get("id"))
print("drained %d answers in %.1fs; all ids answered: %s; final VmHWM %s"%(n,time.time()-t0, len(ids)==N+1, peak[0]))
p.wait()
