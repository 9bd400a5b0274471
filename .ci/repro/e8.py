import sys, json, os, time, subprocess
sys.path.insert(0,'/tmp/nc'); from mcpc import Client
c=Client([],env={"STRATUM_HOME":"/tmp/nc/e7/home"},cwd="/tmp/nc/e7")
deep='['*12000+']'*12000
frames={
 "nested 12000 deep in arguments": '{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"name":"stratum_validate","arguments":{"spec":%s}}}'%deep,
 "nested 12000 deep, id after": '{"jsonrpc":"2.0","method":"tools/call","params":{"x":%s},"id":78}'%deep,
 "broken json with id": '{"jsonrpc":"2.0","id":79,"method":"ping",',
 "invalid utf8": b'{"jsonrpc":"2.0","id":80,"method":"tools/call","params":{"name":"stratum_validate","arguments":{"spec":"\xff\xfe"}}}',
}
for name,f in frames.items():
    c.p.stdin.write((f if isinstance(f,bytes) else f.encode())+b"\n"); c.p.stdin.flush()
    m=c.read(); print(name, "-> id", m.get("id"), json.dumps(m.get("error") or m.get("result"))[:200])
print("tools/list after:", len(c.req("tools/list",{})["result"]["tools"]), "tools")
c.close()
