import sys, json, os, time
sys.path.insert(0,'/tmp/nc'); from mcpc import Client
src=open('/tmp/nc/e2.py').read(); exec(src[src.index("def spec"):src.index("c = Client")])
env={"STRATUM_HOME":"/tmp/nc/a16/home2","PATH":"/tmp/nc/a16/bin:"+os.environ["PATH"]}
c=Client(["--allow-agents"],env=env,cwd="/tmp/nc/a16")
sc,err,_=c.tool("stratum_plan",{"spec":spec("none"),"input":{"items":["a","b"]}}); run=sc["runId"]
for i in range(20):
    time.sleep(0.5); sc,_,_=c.tool("stratum_flow_poll",{"runId":run})
    if sc.get("status")!="running" or any(w.get("paused") for w in sc.get("waiting",[])): break
print(sc.get("status"), json.dumps(sc.get("waiting"))[:400])
a,_,_=c.tool("stratum_audit",{"runId":run,"eventsLimit":1000})
print([ (e["type"], json.dumps(e.get("detail"))[:150]) for e in a["events"] if "fanout" in e["type"] or "dispatch" in e["type"]][:6])
c.close()
