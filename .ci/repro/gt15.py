import sys, json
sys.path.insert(0,'/tmp/nc'); from mcpc import Client
exec(open('/tmp/nc/ans.py').read().split("def drive")[0].split("class Meter")[0])
src=open('/tmp/nc/ans.py').read(); exec(src[src.index("def spec"):src.index("def drive")])
c=Client([],env={"STRATUM_HOME":"/tmp/nc/ans/home"},cwd="/tmp/nc/ans")
sc,_,_=c.tool("stratum_plan",{"spec":spec(),"input":{"items":["a"]}}); run=sc["runId"]; e=sc["ready"][0]
print("ready entry agent field:", {k:e[k] for k in e if k in ("agent","agentHint","wantedAgent")}, sorted(e.keys()))
sc,_,_=c.tool("stratum_step_done",{"runId":run,"stepId":e["id"],"dispatchToken":e["dispatchToken"],"result":{"output":{"v":"x"}}})
g,_,_=c.tool("stratum_gates",{"runId":run}); gate=g["gates"][0]; print("gate view keys:", sorted(gate.keys()), "round", gate.get("round"), "limit", gate.get("maxRounds") or gate.get("limit"))
sc,err,_=c.tool("stratum_gate_resolve",{"runId":run,"stepId":"review","gateToken":"00000000-0000-0000-0000-000000000000","decision":"approve","rationale":"r"})
print("never-issued token:", json.dumps(sc)[:400]); print("  error keys:", sorted(sc["error"].keys()), "error.gate keys:", sorted((sc["error"].get("gate") or {}).keys()))
old=gate["gateToken"]
sc,err,_=c.tool("stratum_gate_resolve",{"runId":run,"stepId":"review","gateToken":old,"decision":"revise","rationale":"again","digest":gate["digest"]})
print("revise:", sc.get("status"), json.dumps(sc.get("ready",[{}])[0].get("revision"))[:300])
sc,err,_=c.tool("stratum_gate_resolve",{"runId":run,"stepId":"review","gateToken":old,"decision":"approve","rationale":"r"})
print("stale token:", json.dumps(sc)[:300]); print("  error keys:", sorted(sc["error"].keys()))
sc,err,_=c.tool("stratum_step_done",{"runId":run,"stepId":"fan/0","dispatchToken":"x","result":{"title":"t","points":[1]}})
print("invalid_arguments:", json.dumps(sc)[:500])
sc,err,_=c.tool("stratum_guard_transition",{"resource_id":"nobody","from_state":"a","to_state":"b","artifacts":{}})
print("guard error:", json.dumps(sc)[:300])
c.close()
