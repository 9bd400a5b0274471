import sys, json
sys.path.insert(0,'/tmp/nc'); from mcpc import Client
c=Client([],env={"STRATUM_HOME":"/tmp/nc/v15/home"},cwd="/tmp/nc/v15/ws")
spec=open('/tmp/nc/v15/a.yaml').read()
for mod in ["exists.txt","missing.txt"]:
    sc,_,_=c.tool("stratum_plan",{"spec":spec,"input":{"module":mod}}); run=sc["runId"]; e=sc["ready"][0]
    print("do text:", e["do"])
    sc,_,_=c.tool("stratum_step_done",{"runId":run,"stepId":"s","dispatchToken":e["dispatchToken"],"result":{"output":{"ok":True}}})
    print(mod,"->",sc["status"], json.dumps(sc.get("ready",[{}])[0].get("previousFailure"))[:400])
c.close()
