import sys, json, os, time, resource
sys.path.insert(0,'/tmp/nc'); from mcpc import Client
env={"STRATUM_HOME":"/tmp/nc/e6/home"}
ens = "".join('          - expr: "!matches(result.s, \'.{1000}x%d\')"\n' % i for i in range(1000))
spec='''version: 1
contracts:
  R: {s: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${s1.output}", contract: R}
    steps:
      - id: s1
        do: "x"
        out: R
        attempts: 1
        ensure:
''' + ens
print("spec bytes", len(spec))
a = Client([], env=env, cwd="/tmp/nc/e6/ws")
sc, err, _ = a.tool("stratum_plan", {"spec": spec, "input": {}})
print(json.dumps(sc)[:800]); run=sc["runId"]; tok=sc["ready"][0]["dispatchToken"]
def cpu(pid):
    f=open(f"/proc/{pid}/stat").read().split(")")[1].split(); return (int(f[11])+int(f[12]))/os.sysconf("SC_CLK_TCK")
c0=cpu(a.p.pid); t0=time.time()
sc,err,_ = a.tool("stratum_step_done", {"runId":run,"stepId":"s1","dispatchToken":tok,"result":{"output":{"s":"a"*4000}}})
print("step_done wall %.2fs, server CPU %.2fs"%(time.time()-t0, cpu(a.p.pid)-c0))
print(json.dumps(sc)[:500])
a.close()
