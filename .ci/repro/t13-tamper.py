import os, shutil, subprocess, json, sys
RUN=os.listdir('/tmp/nc/t13/final/flows'); RUN=[r for r in RUN if not r.startswith('.')][0]
B='/tmp/nc/t13'
def sh(args, home):
    r=subprocess.run(["/tmp/stratum",*args],env={**os.environ,"STRATUM_HOME":home},capture_output=True,text=True,cwd=B,timeout=60)
    return r.returncode, (r.stdout+r.stderr)
def fresh(base, name):
    d=f'{B}/cases/{name}'; shutil.rmtree(d,ignore_errors=True); shutil.copytree(f'{B}/{base}', d); return d
def paths(home): 
    rd=f'{home}/flows/{RUN}'; return rd+'/state.json', rd+'/events.jsonl', f'{home}/flows/.heads/{RUN}', rd
def lines(p): return open(p,'rb').read().split(b'\n')[:-1]
def wlines(p,ls): open(p,'wb').write(b''.join(l+b'\n' for l in ls))
anchor = sh(["audit",RUN,"--head"], f"{B}/final")[1].strip().split("hash ")[-1].split()[0]
print("anchor (audit --head on the final run):", anchor[:90])
def edit_interior(h):
    s,e,_,_=paths(h); ls=lines(e); ls[5]=ls[5].replace(b'"ready"',b'"READY"',1) if b'"ready"' in ls[5] else ls[5][:-3]+b'x'+ls[5][-2:]; wlines(e,ls)
def edit_head(h):
    s,e,_,_=paths(h); ls=lines(e); ls[-1]=ls[-1].replace(b'"at":"2',b'"at":"1',1); wlines(e,ls)
def edit_state(h):
    s,*_=paths(h); t=open(s).read(); open(s,'w').write(t.replace('"completed"','"running"',1))
def del_interior(h):
    s,e,*_=paths(h); ls=lines(e); del ls[7]; wlines(e,ls)
def swap(h):
    s,e,*_=paths(h); ls=lines(e); ls[6],ls[7]=ls[7],ls[6]; wlines(e,ls)
def trunc_mid(h):
    s,e,*_=paths(h); b=open(e,'rb').read(); open(e,'wb').write(b[:len(b)-40])
def garbage(h):
    s,e,*_=paths(h); open(e,'ab').write(b'{"garbage": true}\nnot json at all\n')
def forged(h):
    # append the final run's later events onto the snap19 log: well-formed, correct hashes, continuing the chain
    s,e,*_=paths(h); fin=lines(paths(f'{B}/final')[1]); cur=lines(e); open(e,'ab').write(b''.join(l+b'\n' for l in fin[len(cur):]))
def rb_state(snap):
    def f(h):
        s,*_=paths(h); shutil.copy(paths(f'{B}/{snap}')[0], s)
    return f
def rb_events(h):
    s,e,*_=paths(h); shutil.copy(paths(f'{B}/snap19')[1], e)
def rb_both(h):
    s,e,_,rd=paths(h); shutil.copy(paths(f'{B}/snap5')[0], s); shutil.copy(paths(f'{B}/snap5')[1], e); shutil.copy(paths(f'{B}/snap5')[3]+'/events.idx', rd+'/events.idx')
def rb_all(h):
    rb_both(h); shutil.copy(paths(f'{B}/snap5')[2], paths(h)[2])
def rm_head(h): os.remove(paths(h)[2])
def rm_run(h): shutil.rmtree(paths(h)[3])
def rm_run_head(h): rm_run(h); rm_head(h)
cases=[("edit interior event",edit_interior),("edit head event",edit_head),("edit state.json value",edit_state),
 ("delete interior line",del_interior),("swap interior lines",swap),("truncate log mid-line",trunc_mid),("append garbage",garbage),
 ("roll back state.json by one update",rb_state("snap19")),("roll back state.json by many (step 5)",rb_state("snap5")),
 ("roll back events.jsonl alone",rb_events),("roll back state+events to step 5",rb_both),("roll back state+events+head record to step 5",rb_all),
 ("delete head record",rm_head),("delete run directory",rm_run),("delete run dir and head record",rm_run_head)]
for name,f in cases:
    h=fresh('final',name.replace(' ','_').replace('/','_')); f(h)
    rc,out=sh(["audit","--verify",RUN],h)
    rca,outa=sh(["audit","--verify","--head",anchor,RUN],h)
    print(f"{name:48s} verify exit {rc}: {out.strip().splitlines()[-1][:110] if out.strip() else ''}")
    if rc==0: print(f"{'':48s} with --head anchor: exit {rca}: {outa.strip().splitlines()[-1][:110]}")
# forged line on the running snapshot
h=fresh('snap19','forged'); forged(h)
rc,out=sh(["audit","--verify",RUN],h); print(f"{'append forged well-formed chained lines (running)':48s} verify exit {rc}: {out.strip().splitlines()[-1][:140]}")
