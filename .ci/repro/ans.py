import sys, json, time
sys.path.insert(0,'/tmp/nc'); from mcpc import Client
class Meter(Client):
    wire=0; text=0; struct=0
    def read(self):
        while True:
            l=self.p.stdout.readline()
            if not l: raise EOFError
            m=json.loads(l)
            if "method" in m:
                if "id" in m: self.send({"jsonrpc":"2.0","id":m["id"],"result":{"roots":[]}})
                continue
            r=m.get("result",{})
            if "content" in r:
                self.wire+=len(l); self.text+=sum(len(x.get("text","")) for x in r["content"]); self.struct+=len(json.dumps(r.get("structuredContent"),separators=(',',':'))) if "structuredContent" in r else 0
            return m
def spec():
    return '''version: 1
contracts:
  R: {v: string}
flows:
  entry: main
  main:
    input: {items: "string[]"}
    max_rounds: 2
    output: {from: "${fan.output[0]}", contract: R}
    steps:
      - id: fan
        fanout:
          over: "${input.items}"
          dispatch: consumer
          concurrency: 4
          isolation: none
          require: all
          merge: sequential
          steps:
            - do: "Summarise file ${item} in one line"
              out: R
              ensure:
                - expr: "result.v != ''"
      - id: review
        after: [fan]
        gate: {on_approve: null, on_revise: fan, on_kill: null}
'''
def drive(n):
    c=Meter([],env={"STRATUM_HOME":"/tmp/nc/ans/home"},cwd="/tmp/nc/ans")
    c.wire=c.text=c.struct=0
    sc,_,_=c.tool("stratum_plan",{"spec":spec(),"input":{"items":[f"src/f{i}.go" for i in range(n)]}}); run=sc["runId"]
    todo=list(sc.get("ready",[]))
    while todo:
        e=todo.pop(0)
        sc,err,_=c.tool("stratum_step_done",{"runId":run,"stepId":e["id"],"dispatchToken":e["dispatchToken"],"result":{"output":{"v":"ok "+e["id"]}}})
        assert not err, sc
        todo+=sc.get("ready",[])
    g,_,_=c.tool("stratum_gates",{"runId":run})
    gate=g["gates"][0]
    sc,err,_=c.tool("stratum_gate_resolve",{"runId":run,"stepId":"review","gateToken":gate["gateToken"],"decision":"approve","rationale":"the person said so","digest":gate.get("digest")})
    st=sc.get("status"); c.close()
    return st, c.text, c.struct, c.wire
import os; os.makedirs("/tmp/nc/ans",exist_ok=True)
for n in (10,50,200):
    st,t,s,w=drive(n); print(f"{n:4d} items: final status {st}; text {t} B, structured {s} B, wire {w} B; text per item {t/n:.0f} B")
