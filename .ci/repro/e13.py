import sys, json, os, time
sys.path.insert(0,'/tmp/nc'); from mcpc import Client
exec(open('/tmp/nc/e2.py').read().split("c = Client")[0].split("env=")[0])
src=open('/tmp/nc/e2.py').read(); fn=src[src.index("def spec"):src.index("c = Client")]; exec(fn)
env={"STRATUM_HOME":"/tmp/nc/e13/home","PATH":"/tmp/nc/e13/bin:"+os.environ["PATH"]}
c=Client(["--allow-agents"],env=env,cwd="/tmp/nc/e13/ws")
sc,err,_=c.tool("stratum_plan",{"spec":spec("none"),"input":{"items":["a","b","c"]}})
print(json.dumps(sc)[:300]); run=sc.get("runId")
for i in range(40):
    if sc.get("status") not in ("running","ready"): break
    time.sleep(0.5); sc,_,_=c.tool("stratum_flow_poll",{"runId":run})
print(json.dumps(sc)[:900]); c.close()
print("claude started", sum(1 for _ in open("/tmp/nc/e13/started")))
