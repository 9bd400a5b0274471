import os, shutil, subprocess, json, glob
B='/tmp/nc/g'
def sh(args, home, stdin=None):
    r=subprocess.run(["/tmp/stratum",*args],env={**os.environ,"STRATUM_HOME":home},input=stdin,capture_output=True,text=True,cwd=B,timeout=60)
    return r.returncode,(r.stdout+r.stderr).strip()
def fresh(n):
    d=f'{B}/cases/{n}'; shutil.rmtree(d,ignore_errors=True); shutil.copytree(f'{B}/pristine',d); return d, glob.glob(d+'/guards/*')[0]
HEAD=json.loads(sh(["guard","verify","t:1"],f'{B}/pristine')[1])["head"]
def jedit(p,f):
    d=json.load(open(p)); f(d); open(p,'w').write(json.dumps(d))
def wsroot(r): jedit(r+'/registry.json', lambda d: d.__setitem__('workspace_root','/tmp/nc/g/evil') if 'workspace_root' in d else print("keys",list(d.keys())))
def initial(r): jedit(r+'/registry.json', lambda d: d.__setitem__('initial','review'))
def del_ledger(r): os.remove(r+'/ledger.jsonl')
def trunc_ledger(r):
    ls=open(r+'/ledger.jsonl').read().splitlines(True); open(r+'/ledger.jsonl','w').write(''.join(ls[:1]))
def edit_last(r):
    ls=open(r+'/ledger.jsonl').read().splitlines(True); ls[-1]=ls[-1].replace('"refused"','"applied"',1) if '"refused"' in ls[-1] else ls[-1].replace('k2','kX'); open(r+'/ledger.jsonl','w').write(''.join(ls))
def torn(r): open(r+'/ledger.jsonl','a').write('{"entry_dig')
def edit_engine(r): jedit(r+'/engine.json', lambda d: print("engine.json keys", list(d.keys())))
def del_all(r): shutil.rmtree(r)
def rb_all(r):
    # roll back ledger+registry consistently: keep only the first ledger line (not consistent registry) 
    pass
cases=[("redirect workspace_root in registry.json",wsroot),("edit initial in registry.json",initial),("delete ledger.jsonl",del_ledger),
 ("truncate ledger to its first entry",trunc_ledger),("edit the complete last line",edit_last),("torn (incomplete) last line",torn),("delete the resource directory",del_all)]
done='{"resource_id":"t:1","from_state":"review","to_state":"done","artifacts":{"ok":"approved.md"},"idempotency_key":"k3"}'
for n,f in cases:
    h,r=fresh(n.replace(' ','_')); f(r)
    rc,out=sh(["guard","verify","t:1"],h)
    print(f"{n:42s} verify exit {rc}: {out[:200]}")
    rc2,out2=sh(["guard","transition"],h,done)
    print(f"{'':42s} transition review->done: exit {rc2}: {out2[:150]}")
    rc3,out3=sh(["guard","verify","--head",HEAD,"t:1"],h)
    print(f"{'':42s} verify --head: exit {rc3}: {out3[:150]}")
