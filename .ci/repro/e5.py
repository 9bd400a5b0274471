import sys, json, os, time, threading, subprocess
sys.path.insert(0,'/tmp/nc'); from mcpc import Client
env={"STRATUM_HOME":"/tmp/nc/e5/home"}
spec='''version: 1
contracts:
  R: {ok: boolean}
  A: {x: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${slow.output}", contract: R}
    steps:
      - id: first
        do: "anything"
        out: A
      - id: slow
        after: [first]
        evaluate:
          command: "echo $$ > /tmp/nc/e5/pid; sleep 60; echo '{\\"status\\":\\"closed\\",\\"children\\":[],\\"reason\\":\\"x\\"}'"
          timeout_ms: 120000
        out: R
'''
a = Client(["--allow-commands"], env=env, cwd="/tmp/nc/e5/ws")
sc, err, _ = a.tool("stratum_plan", {"spec": spec, "input": {}})
run = sc["runId"]; tok = sc["ready"][0]["dispatchToken"]
res = {}
def report():
    t0=time.time(); res["sd"] = a.tool("stratum_step_done", {"runId": run, "stepId":"first","dispatchToken":tok,"result":{"output":{"x":"y"}}})[0]; res["sd_t"]=time.time()-t0
th=threading.Thread(target=report); th.start()
for _ in range(100):
    if os.path.exists("/tmp/nc/e5/pid") and open("/tmp/nc/e5/pid").read().strip(): break
    time.sleep(0.05)
pid=int(open("/tmp/nc/e5/pid").read()); pgid=os.getpgid(pid)
print("evaluate sh pid", pid, "pgid", pgid, "members before cancel:", subprocess.run(["pgrep","-a","-g",str(pgid)],capture_output=True,text=True).stdout.strip().replace("\n"," | "))
b = Client([], env=env, cwd="/tmp/nc/e5/ws")
t0=time.time(); c_sc,_,_ = b.tool("stratum_flow_cancel", {"runId": run}); ct=time.time()-t0
print("stratum_flow_cancel took %.3fs:"%ct, json.dumps(c_sc)[:200])
th.join(timeout=70)
print("blocked step_done returned after %.2fs:"%res.get("sd_t",-1), json.dumps(res.get("sd"))[:300])
time.sleep(0.3)
alive = subprocess.run(["pgrep","-a","-g",str(pgid)],capture_output=True,text=True).stdout.strip()
print("process group alive after cancel:", alive)
a.close(); b.close()
