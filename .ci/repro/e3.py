import sys, json, os
sys.path.insert(0,'/tmp/nc'); from mcpc import Client
env={"STRATUM_HOME":"/tmp/nc/e3/home"}
spec='''version: 1
contracts:
  R: {path: string, probe: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${probe.output}", contract: R}
    steps:
      - id: probe
        do: "Name a file"
        out: R
        attempts: 200
        ensure:
          - expr: "file_contains(result.path, result.probe)"
'''
c = Client([], env=env, cwd="/tmp/nc/e3/ws")
for root in ["/", "..", "/tmp/nc/e3/ws/nothing", "/tmp/nc/e3/ws/notes.txt", "/tmp/nc/e3/ws/escape", "/tmp/nc/e3/outside"]:
    sc, err, _ = c.tool("stratum_plan", {"spec": spec, "input": {}, "workspaceRoot": root})
    print(repr(root), "->", sc.get("status"), (sc.get("error") or {}).get("code"), (sc.get("error") or {}).get("message","")[:220])
for root in ["/", "/tmp/nc/e3/outside"]:
    sc, err, _ = c.tool("stratum_guard_register", {"resource_id":"t:1","initial":"a","graph":{"a":["b"]},"terminal":["b"],"edge_predicates":{},"workspace_root":root})
    print("guard", root, "->", json.dumps(sc)[:300])
# oracle attempt through a path escaping the default root
sc, err, _ = c.tool("stratum_plan", {"spec": spec, "input": {}})
tok = sc["ready"][0]["dispatchToken"]; run=sc["runId"]
for p in ["../outside/secret", "/tmp/nc/e3/outside/secret", "escape/secret"]:
    sc, err, _ = c.tool("stratum_step_done", {"runId": run, "stepId":"probe", "dispatchToken": tok, "result":{"output":{"path":p,"probe":"s3cr3t"}}})
    r = sc.get("ready",[{}])[0]
    tok = r.get("dispatchToken", tok)
    print("probe", p, "->", sc.get("status"), json.dumps(r.get("previousFailure"))[:300])
c.req("tools/list",{}); c.close()
