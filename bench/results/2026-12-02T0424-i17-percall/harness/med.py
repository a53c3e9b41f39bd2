import sys, statistics as st
rows=[l.split() for l in open(sys.argv[1]) if l[0].isdigit()]
for b in 'ab':
    r=[x for x in rows if x[1]==b]
    cpu=[float(x[2]) for x in r]; t=[float(x[3]) for x in r]; p=[float(x[4]) for x in r]
    ratio=[float(x[3])/4147*1e6/float(x[4]) for x in r]
    print('%s (%s): n=%d  tar median %.4f s = %.1f us/call  NULL median %.1f us  ratio of medians %.3f  median of per-round ratios %.3f  daemon task-clock median %.1f ms/walk = %.2f us/call' % (b, 'after' if b=='a' else 'before', len(r), st.median(t), st.median(t)/4147*1e6, st.median(p), st.median(t)/4147*1e6/st.median(p), st.median(ratio), st.median(cpu), st.median(cpu)/4147*1e3))
# paired B/A per round
A={x[0]:x for x in rows if x[1]=='a'}; B={x[0]:x for x in rows if x[1]=='b'}
pr=[float(B[k][3])/float(A[k][3]) for k in A if k in B]
pc=[float(B[k][2])/float(A[k][2]) for k in A if k in B]
print('paired before/after per round: tar time median %.3f, daemon CPU median %.3f' % (st.median(pr), st.median(pc)))
