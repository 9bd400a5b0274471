import json, hashlib, glob, shutil, subprocess, os
B='/tmp/nc/g'; d=f'{B}/cases/resealed'; shutil.rmtree(d,ignore_errors=True); shutil.copytree(f'{B}/pristine',d)
r=glob.glob(d+'/guards/*')[0]+'/registry.json'
rec=json.load(open(r)); print("registry keys:", sorted(rec.keys()))
def canon(o): return json.dumps(o,sort_keys=True,separators=(',',':'),ensure_ascii=False)
body={k:v for k,v in rec.items() if k!='seal'}
print("seal recomputes as stored:", hashlib.sha256(canon(body).encode()).hexdigest()==rec['seal'])
rec['workspace_root']='/tmp/nc/g/evil'; body={k:v for k,v in rec.items() if k!='seal'}
rec['seal']=hashlib.sha256(canon(body).encode()).hexdigest(); open(r,'w').write(json.dumps(rec))
env={**os.environ,"STRATUM_HOME":d}
HEAD=json.loads(subprocess.run(["/tmp/stratum","guard","verify","t:1"],env={**os.environ,"STRATUM_HOME":f'{B}/pristine'},capture_output=True,text=True).stdout)["head"]
for args,inp in [(["guard","verify","t:1"],None),(["guard","verify","--head",HEAD,"t:1"],None),
                 (["guard","transition"],'{"resource_id":"t:1","from_state":"review","to_state":"done","artifacts":{"ok":"approved.md"},"idempotency_key":"k9"}')]:
    p=subprocess.run(["/tmp/stratum",*args],env=env,input=inp,capture_output=True,text=True,cwd=B)
    print(args[:2], "exit", p.returncode, (p.stdout+p.stderr)[:220])
