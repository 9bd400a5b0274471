import sys, json
sys.path.insert(0,'/tmp/nc'); from mcpc import Client
src=open('/tmp/nc/ans.py').read(); exec(src[src.index("def spec"):src.index("def drive")])
c=Client([],env={"STRATUM_HOME":"/tmp/nc/ans/home"},cwd="/tmp/nc/ans")
sc,_,_=c.tool("stratum_plan",{"spec":spec(),"input":{"items":["a"]}}); run=sc["runId"]; e=sc["ready"][0]
sc,_,_=c.tool("stratum_step_done",{"runId":run,"stepId":e["id"],"dispatchToken":e["dispatchToken"],"result":{"output":{"v":"x"}}})
g,_,_=c.tool("stratum_gates",{"runId":run}); gate=g["gates"][0]; old=gate["gateToken"]
sc,_,_=c.tool("stratum_gate_resolve",{"runId":run,"stepId":"review","gateToken":old,"decision":"revise","rationale":"again","digest":gate["digest"]})
e=sc["ready"][0]; sc,_,_=c.tool("stratum_step_done",{"runId":run,"stepId":e["id"],"dispatchToken":e["dispatchToken"],"result":{"output":{"v":"y"}}})
sc,err,_=c.tool("stratum_gate_resolve",{"runId":run,"stepId":"review","gateToken":old,"decision":"approve","rationale":"r"})
print("stale token, gate waiting in round 1:", sc["error"]["message"][:330]); print("  error.gate:", {k:sc["error"].get("gate",{}).get(k) for k in ("round","maxRounds","revisesLeft","digest")})
g,_,_=c.tool("stratum_gates",{"runId":run}); gate=g["gates"][0]
sc,err,_=c.tool("stratum_gate_resolve",{"runId":run,"stepId":"review","gateToken":gate["gateToken"],"decision":"approve","rationale":"r","digest":"0"*64})
print("wrong digest:", sc.get("error",{}).get("code"), sc.get("error",{}).get("message","")[:200])
print("gates answer bytes:", len(json.dumps(g)))
c.close()
