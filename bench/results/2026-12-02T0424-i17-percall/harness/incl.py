import sys, subprocess, collections
f, calls, root = sys.argv[1], int(sys.argv[2]), sys.argv[3]
out = subprocess.run(['perf','script','-i',f,'-F','ip,sym','--no-inline'],capture_output=True,text=True).stdout
incl = collections.Counter(); selfc = collections.Counter(); n=0
for b in out.split('\n\n'):
    if not b.strip(): continue
    syms = [l.strip().split(None,1)[1] if len(l.strip().split(None,1))>1 else '?' for l in b.strip().split('\n')]
    syms = [s.split(' (inlined)')[0] for s in syms]
    if root not in syms: continue
    i = syms.index(root)
    n+=1
    for s in set(syms[:i+1]): incl[s]+=1
    selfc[syms[0]]+=1
hz=1999
print(root, n, '%.2f us/call'%(n/hz/calls*1e6))
for s,k in incl.most_common(int(sys.argv[4]) if len(sys.argv)>4 else 60):
    print('  %-40s %5d %.2f  self %d'%(s,k,k/hz/calls*1e6, selfc[s]))
