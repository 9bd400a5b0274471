import sys, json, os, time, subprocess, glob
sys.path.insert(0,'/tmp/nc'); from mcpc import Client
env={"STRATUM_HOME":"/tmp/nc/e9/home"}
spec='''version: 1
contracts:
  R: {path: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${probe.output}", contract: R}
    steps:
      - id: probe
        do: "x"
        out: R
        ensure:
          - expr: "result.path != ''"
'''
c=Client([],env=env,cwd="/tmp/nc/e9/ws")
tl={t["name"]:t for t in c.req("tools/list",{})["result"]["tools"]}
print("step_done schema usage.usd:", json.dumps(tl["stratum_step_done"]["inputSchema"]["properties"]["result"]["properties"]["usage"]["properties"]["usd"])[:200])
sc,_,_=c.tool("stratum_plan",{"spec":spec,"input":{}}); run=sc["runId"]; tok=sc["ready"][0]["dispatchToken"]
for n in [10<<20, 1<<20]:
    sc,err,_=c.tool("stratum_step_done",{"runId":run,"stepId":"probe","dispatchToken":tok,"result":{"output":{"path":"x"*n}}})
    print("output of %d bytes -> isError %s %s"%(n,err,json.dumps(sc)[:260]))
n=(1<<20)-100
sc,err,_=c.tool("stratum_step_done",{"runId":run,"stepId":"probe","dispatchToken":tok,"result":{"output":{"path":"x"*n},"usage":{"usd":None,"tokens":3}}})
print("output of %d bytes with usd null -> isError %s status %s"%(n,err,sc.get("status")))
d=glob.glob("/tmp/nc/e9/home/flows/"+run)[0]
for f in sorted(os.listdir(d)): print("  ",f, os.path.getsize(os.path.join(d,f)))
t0=time.time(); r=c.req("tools/call",{"name":"stratum_audit","arguments":{"runId":run}}); 
print("stratum_audit answer %d bytes in %.2fs"%(len(json.dumps(r)), time.time()-t0))
c.close()
