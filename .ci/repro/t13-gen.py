import sys, json, os, time, shutil
sys.path.insert(0,'/tmp/nc'); from mcpc import Client
N=20
steps="".join(f'      - {{id: s{i}, do: "step {i}", out: R{", after: [s%d]"%(i-1) if i>1 else ""}}}\n' for i in range(1,N+1))
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
open('/tmp/nc/t13/flow.yaml','w').write(spec)
home='/tmp/nc/t13/home'
c=Client([],env={"STRATUM_HOME":home},cwd="/tmp/nc/t13")
sc,_,_=c.tool("stratum_plan",{"spec":spec,"input":{}}); run=sc["runId"]
k=0
while sc.get("status")=="ready":
    e=sc["ready"][0]; k+=1
    sc,_,_=c.tool("stratum_step_done",{"runId":run,"stepId":e["id"],"dispatchToken":e["dispatchToken"],"result":{"output":{"v":k}}})
    if k in (5,19): shutil.copytree(home, f'/tmp/nc/t13/snap{k}')
print(run, sc["status"]); c.close()
shutil.copytree(home,'/tmp/nc/t13/final')
