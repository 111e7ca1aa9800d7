"""Per client count: each server's median mean response, its median ratio to
threaded's within a repetition, server CPU (us) and context switches per
event: summarize_cpu.py FILE.csv [REFERENCE]."""
import sys,collections,statistics as st
rows=collections.defaultdict(dict)
names=[]
for l in open(sys.argv[1]):
  f=l.strip().split(',')
  if len(f)<8 or not f[1].isdigit(): continue
  rows[(int(f[1]),int(f[2]))][f[0]]=(float(f[4]),float(f[6]),float(f[7]))
  if f[0] not in names: names.append(f[0])
ref=sys.argv[2] if len(sys.argv)>2 else 'threaded'
for n in sorted({k[0] for k in rows}):
  out=[]
  for nm in names:
    reps=[v for (c,r),v in rows.items() if c==n and nm in v and ref in v]
    if not reps: continue
    ms=st.median(v[nm][0] for v in reps); rat=st.median(v[nm][0]/v[ref][0] for v in reps)
    cpu=st.median(v[nm][1] for v in reps); cs=st.median(v[nm][2] for v in reps)
    out.append('%s %.3fms x%.3f cpu %.0f cs %.2f'%(nm,ms,rat,cpu,cs))
  print(n,len(reps),' | '.join(out))
