import sys, json, os, time, glob
sys.path.insert(0,'/tmp/nc'); from mcpc import Client
N=int(sys.argv[1])
steps="".join(f'      - {{id: s{i}, do: "step {i}", out: R{", after: [s%d]"%(i-1) if i>1 else ""}, ensure: [{{expr: "result.v >= 0"}}]}}\n' for i in range(1,N+1))
spec=f'''version: 1
contracts:
  R: {{v: number}}
flows:
  entry: main
  main:
    input: {{}}
    output: {{from: "${{s{N}.output}}", contract: R}}
    steps:
{steps}'''
c=Client([],env={"STRATUM_HOME":"/tmp/nc/e10/home"},cwd="/tmp/nc/e10/ws")
sc,_,_=c.tool("stratum_plan",{"spec":spec,"input":{}}); run=sc["runId"]
t0=time.time()
while sc.get("status")=="ready":
    e=sc["ready"][0]
    sc,_,_=c.tool("stratum_step_done",{"runId":run,"stepId":e["id"],"dispatchToken":e["dispatchToken"],"result":{"output":{"v":1}}})
print("drove %d steps in %.1fs, status %s"%(N,time.time()-t0,sc.get("status")))
d="/tmp/nc/e10/home/flows/"+run
print("events lines", sum(1 for _ in open(d+"/events.jsonl")))
for args in [{"runId":run},{"runId":run,"eventsLimit":1000},{"runId":run,"steps":["s1"]}]:
    t0=time.time(); r=c.req("tools/call",{"name":"stratum_audit","arguments":args}); dt=time.time()-t0
    sc2=r["result"].get("structuredContent",{})
    print(args.keys(), "answer %d bytes in %.3fs; events returned %d, nextEventsAfter %s, steps %d"%(len(json.dumps(r)),dt,len(sc2.get("events",[])),sc2.get("nextEventsAfter"),len(sc2.get("steps",{}))))
c.close()
