import json, subprocess, sys, os, time, threading
class Client:
    def __init__(self, args=(), env=None, cwd=None, roots=None):
        e = dict(os.environ); e.update(env or {})
        self.p = subprocess.Popen(["/tmp/stratum","mcp",*args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e, cwd=cwd)
        self.id = 0; self.roots = roots
        self.stderr = []
        threading.Thread(target=lambda: [self.stderr.append(l) for l in self.p.stderr], daemon=True).start()
        caps = {"roots": {"listChanged": False}} if roots is not None else {}
        self.init = self.req("initialize", {"protocolVersion":"2025-06-18","capabilities":caps,"clientInfo":{"name":"nc","version":"0"}})
        self.send({"jsonrpc":"2.0","method":"notifications/initialized"})
    def send(self, m):
        self.p.stdin.write((json.dumps(m)+"\n").encode()); self.p.stdin.flush()
    def read(self):
        while True:
            l = self.p.stdout.readline()
            if not l: raise EOFError("server closed")
            m = json.loads(l)
            if "method" in m and "id" in m:  # server request
                if m["method"] == "roots/list":
                    self.send({"jsonrpc":"2.0","id":m["id"],"result":{"roots":[{"uri":"file://"+r} for r in (self.roots or [])]}})
                else:
                    self.send({"jsonrpc":"2.0","id":m["id"],"result":{}})
                continue
            if "method" in m: continue
            return m
    def req(self, method, params):
        self.id += 1; i = self.id
        self.send({"jsonrpc":"2.0","id":i,"method":method,"params":params})
        while True:
            m = self.read()
            if m.get("id") == i: return m
    def tool(self, name, args):
        r = self.req("tools/call", {"name":name,"arguments":args})
        res = r.get("result", {})
        sc = res.get("structuredContent")
        if sc is None:
            try: sc = json.loads(res["content"][0]["text"])
            except Exception: sc = r
        return sc, res.get("isError", False), r
    def close(self):
        self.p.stdin.close(); self.p.wait(timeout=30)
