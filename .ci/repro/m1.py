import sys, json
sys.path.insert(0,'/tmp/nc'); from mcpc import Client
c=Client([],env={"STRATUM_HOME":"/tmp/nc/m15/home"},cwd="/tmp/nc/m15/ws")
ins=c.init["result"].get("instructions","")
print("instructions:", len(ins), "chars")
print("server capabilities:", list(c.init["result"]["capabilities"].keys()))
tl=c.req("tools/list",{})["result"]["tools"]
print("tools:", len(tl), "; description bytes total", sum(len(t.get("description","")) for t in tl), "; max", max(len(t.get("description","")) for t in tl))
v=[t for t in tl if t["name"]=="stratum_validate"][0]; print("validate description", len(v["description"]), "chars")
# properties without type
def walk(s,p):
    out=[]
    if isinstance(s,dict):
        if "properties" in s:
            for k,ps in s["properties"].items():
                if not any(x in ps for x in ("type","anyOf","oneOf","enum","const","$ref")): out.append(p+"."+k)
                if "description" not in ps: out.append(p+"."+k+"(no description)")
                out+=walk(ps,p+"."+k)
        for key in ("items","additionalProperties"):
            if isinstance(s.get(key),dict): out+=walk(s[key],p+"[]")
        for key in ("anyOf","oneOf"):
            for i,x in enumerate(s.get(key,[])): out+=walk(x,p)
    return out
bad=[]
for t in tl: bad+= [t["name"]+x for x in walk(t["inputSchema"],"")]
print("input-schema properties lacking a type or description:", bad[:20], len(bad))
r=c.req("resources/list",{}); print("resources:", [(x["uri"],x.get("name")) for x in r["result"]["resources"]])
for x in r["result"]["resources"]:
    rr=c.req("resources/read",{"uri":x["uri"]}); txt=rr["result"]["contents"][0].get("text",""); print("  ",x["uri"],len(txt),"chars ~",len(txt)//4,"tokens")
p=c.req("prompts/list",{}); print("prompts:", [(x["name"],[a["name"] for a in x.get("arguments",[])]) for x in p["result"]["prompts"]])
open('/tmp/nc/m15/language.md','w').write(c.req("resources/read",{"uri":r["result"]["resources"][0]["uri"]})["result"]["contents"][0]["text"])
open('/tmp/nc/m15/instructions.txt','w').write(ins)
c.close()
