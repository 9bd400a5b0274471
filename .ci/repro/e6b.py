import sys, json, os, time, threading
sys.path.insert(0,'/tmp/nc'); exec(open('/tmp/nc/e6.py').read().split("def cpu")[0])
res={}
def sd():
    t0=time.time(); res["sd"]=a.tool("stratum_step_done", {"runId":run,"stepId":"s1","dispatchToken":tok,"result":{"output":{"s":"a"*4000}}})[0]; res["t"]=time.time()-t0
th=threading.Thread(target=sd); th.start(); time.sleep(0.8)
b=Client([], env=env, cwd="/tmp/nc/e6/ws")
t0=time.time(); sc,_,_=b.tool("stratum_flow_cancel",{"runId":run}); print("cancel during ensures took %.2fs"%(time.time()-t0), json.dumps(sc)[:200])
th.join(); print("step_done took %.2fs"%res["t"], json.dumps(res["sd"])[:200]); a.close(); b.close()
