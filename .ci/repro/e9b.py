import sys, json, glob, os
sys.path.insert(0,'/tmp/nc'); from mcpc import Client
c=Client([],env={"STRATUM_HOME":"/tmp/nc/e9/home"},cwd="/tmp/nc/e9/ws")
run=os.path.basename(glob.glob('/tmp/nc/e9/home/flows/*')[0])
r=c.req("tools/call",{"name":"stratum_audit","arguments":{"runId":run}})["result"]
print("text bytes", len(r["content"][0]["text"]), "structured bytes", len(json.dumps(r.get("structuredContent"))))
sc=r.get("structuredContent") or json.loads(r["content"][0]["text"])
for k,v in sc.items(): print(" ",k,len(json.dumps(v)))
for k,v in sc["steps"].items() if isinstance(sc.get("steps"),dict) else []:
    print("  step",k,{kk:len(json.dumps(vv)) for kk,vv in v.items()})
c.close()
