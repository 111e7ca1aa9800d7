"""Per client count, each server's median mean response (ms) and its median
ratio to threaded's within a repetition: summarize.py FILE.csv [REFERENCE]."""
import sys,collections,statistics as st
d=collections.defaultdict(list)
names=[]
for l in open(sys.argv[1]):
  f=l.strip().split(',')
  if len(f)<6 or f[0]=="name" or not f[1].strip().isdigit(): continue
  d[(f[0],int(f[1]))].append(float(f[4]))
  if f[0] not in names: names.append(f[0])
ref=sys.argv[2] if len(sys.argv)>2 else 'threaded'
for n in sorted({k[1] for k in d}):
  t=d[(ref,n)]
  out=[]
  for nm in names:
    s=d.get((nm,n),[])
    if not s: continue
    k=min(len(s),len(t))
    rat=[a/b for a,b in zip(s[:k],t[:k])]
    out.append('%s %.3f (%s x%.3f)'%(nm,st.median(s),len(s),st.median(rat) if rat else 0))
  print(n,' | '.join(out))
