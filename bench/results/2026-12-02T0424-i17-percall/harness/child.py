import sys, subprocess, collections
f, calls, root = sys.argv[1], int(sys.argv[2]), sys.argv[3]
out = subprocess.run(['perf','script','-i',f,'-F','ip,sym','--no-inline'],capture_output=True,text=True).stdout
ch = collections.Counter(); n=0
for b in out.split('\n\n'):
    if not b.strip(): continue
    syms = [l.strip().split(None,1)[1] if len(l.strip().split(None,1))>1 else '?' for l in b.strip().split('\n')]
    syms = [s.split(' (inlined)')[0] for s in syms]
    if root not in syms: continue
    i = syms.index(root); n+=1
    ch[syms[i-1] if i>0 else '(self)']+=1
hz=1999
print(root, n, '%.2f'%(n/hz/calls*1e6))
for s,k in ch.most_common(25): print('  %-40s %5d %.2f'%(s,k,k/hz/calls*1e6))
