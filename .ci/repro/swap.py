import os, subprocess, threading
stop=False; swaps=0
def swapper():
    global swaps
    while not stop:
        os.rename("ws/d","ws/d.real"); os.rename("ws/link","ws/d")
        os.rename("ws/d","ws/link"); os.rename("ws/d.real","ws/d"); swaps+=1
t=threading.Thread(target=swapper); t.start()
from collections import Counter
c=Counter()
for i in range(1540):
    r=subprocess.run(["/tmp/stratum","eval","--workspace","ws",'file_contains("d/f.txt", "OUTSIDE")'],capture_output=True,text=True)
    c[r.stdout.strip()[:80]]+=1
stop=True; t.join()
print("swaps",swaps); print(c)
