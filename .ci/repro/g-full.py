import os, shutil, subprocess, json
F='/tmp/nc/full'
def sh(args, inp=None):
    p=subprocess.run(["/tmp/stratum",*args],env={**os.environ,"STRATUM_HOME":F+'/home'},input=inp,capture_output=True,text=True,cwd='/tmp/nc/g')
    return p.returncode,(p.stdout+p.stderr).strip()
tr='{"resource_id":"t:1","from_state":"draft","to_state":"review","artifacts":{"plan":"plan.md"},"idempotency_key":"kk"}'
for free_pages in range(0,8):
    for x in os.listdir(F): 
        p=F+'/'+x; shutil.rmtree(p) if os.path.isdir(p) else os.remove(p)
    rc,out=sh(["guard","register"],open('/tmp/nc/g/reg.json').read())
    st=os.statvfs(F); free=st.f_bavail*st.f_frsize
    fill=free-free_pages*4096
    if fill>0: open(F+'/fill','wb').write(b'\0'*fill)
    rc,out=sh(["guard","transition"],tr)
    try: j=json.loads(out); status=j.get("status"); err=j.get("error_type"); warn=j.get("warning")
    except Exception: status,err,warn=out[:80],None,None
    if os.path.exists(F+'/fill'): os.remove(F+'/fill')
    rc2,out2=sh(["guard","verify","t:1"]); v=json.loads(out2)
    rc3,out3=sh(["guard","transition"],tr); r=json.loads(out3)
    print(f"free pages {free_pages}: answer status={status} error={err} warning={str(warn)[:60]!r} | after freeing: verify {v.get('status') or v.get('error_type')} state={v.get('current_state')} entries={v.get('entries')} | retry: {r.get('status') or r.get('error_type')}")
