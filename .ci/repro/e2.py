import sys, json, os
sys.path.insert(0,'/tmp/nc'); from mcpc import Client
env={"STRATUM_HOME":"/tmp/nc/e2/home","PATH":"/tmp/nc/e2/bin:"+os.environ["PATH"]}
def spec(iso, extra="", agent=""):
    return f'''version: 1
contracts:
  R: {{v: string}}
flows:
  entry: main
  main:
    input: {{items: "string[]"}}
    output: {{from: "${{fan.output[0]}}", contract: R}}
    steps:
      - id: fan
        fanout:
          over: "${{input.items}}"
          concurrency: 3
          isolation: {iso}
          require: all
          merge: sequential{extra}
          steps:
            - do: "Work on ${{item}}"{agent}
              out: R
'''
c = Client([], env=env, cwd="/tmp/nc/e2/ws")
for name, s in [("plain fanout", spec("none")),
                ("worktree+pre_merge", spec("worktree", '\n          pre_merge: ["touch /tmp/nc/e2/premerge-ran"]')),
                ("codex", spec("none", "", "\n              agent: codex")),
                ("consumer", spec("none", "\n          dispatch: consumer"))]:
    sc, err, _ = c.tool("stratum_plan", {"spec": s, "input": {"items": ["a","b","c"]}})
    print(name, "isError", err, json.dumps(sc)[:700]); print()
c.req("tools/list",{}); c.close()
print("claude started:", os.path.exists("/tmp/nc/e2/claude-started"), "codex:", os.path.exists("/tmp/nc/e2/codex-started"), "pre_merge:", os.path.exists("/tmp/nc/e2/premerge-ran"))
