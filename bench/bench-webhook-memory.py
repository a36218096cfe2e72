#!/usr/bin/env python3
# bench-webhook-memory.py GPUSCHED: 40 reviews of a ~1 MB valid Pod (33,000 env entries) from 4
# parallel senders against `serve --webhook --threads 4` on loopback; prints the time and the
# server's peak and final resident memory (docs/performance.md).
import json, socket, subprocess, sys, time, threading, re
GS=sys.argv[1]
p=subprocess.Popen([GS,"serve","--webhook","--listen","127.0.0.1:0","--threads","4","--drain-period","0"],stderr=subprocess.PIPE,text=True)
port=None
while port is None:
    line=p.stderr.readline()
    m=re.search(r":(\d+)",line)
    if "listening" in line and m: port=int(m.group(1))
env=[{"name":"E%d"%i,"value":"v"} for i in range(33000)]
pod={"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"x","env":env,"resources":{"limits":{"nvidia.com/gpu":"1"}}}]}}
def rev(uid):
    return json.dumps({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":uid,"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"namespace":"a","operation":"CREATE","userInfo":{"username":"u"},"object":pod}}, separators=(",",":")).encode()
body=rev("x")
print("body bytes", len(body))
def post(n):
    for i in range(n):
        s=socket.create_connection(("127.0.0.1",port)); s.settimeout(30)
        s.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"%len(body)+body)
        d=b""
        while True:
            x=s.recv(65536)
            if not x: break
            d+=x
        s.close()
        code=d[9:12]
        if code!=b"200": print("code",code, d[-200:])
t0=time.time()
ts=[threading.Thread(target=post,args=(10,)) for _ in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
el=time.time()-t0
st=open("/proc/%d/status"%p.pid).read()
hwm=re.search(r"VmHWM:\s+(\d+)",st).group(1); rss=re.search(r"VmRSS:\s+(\d+)",st).group(1)
print("40 reviews, 4 parallel senders: %.2f s; VmHWM %d MiB, VmRSS after %d MiB"%(el,int(hwm)//1024,int(rss)//1024))
p.terminate(); p.wait()
