import sys, json
sys.path.insert(0,'/tmp/nc'); from mcpc import Client
import glob,os
run=os.path.basename(glob.glob('/tmp/nc/e13/home/flows/*')[0])
c=Client([],env={"STRATUM_HOME":"/tmp/nc/e13/home"},cwd="/tmp/nc/e13/ws")
sc,_,_=c.tool("stratum_audit",{"runId":run,"eventsLimit":1000})
for e in sc["events"]:
    if e["type"] in ("failed","fanout_attempt_result","fanout_item_skipped"): print(e["type"], json.dumps(e.get("detail"))[:250])
c.close()
