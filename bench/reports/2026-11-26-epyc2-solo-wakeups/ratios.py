import csv,statistics as st,sys
rows=list(csv.DictReader(open(sys.argv[1])))
A,B,T=sys.argv[2:5]
for n in sorted({r['clients'] for r in rows}, key=int):
  ra=[];rt=[];rb=[]
  for rep in sorted({r['rep'] for r in rows}):
    d={x['name']:float(x['mean_ms']) for x in rows if x['clients']==n and x['rep']==rep}
    if len(d)<3: continue
    ra.append(d[B]/d[A]); rt.append(d[B]/d[T]); rb.append(d[A]/d[T])
  print(n,'n=%d'%len(ra),'mean resp %s/%s %.3f (%.2f-%.2f)'%(B,A,st.median(ra),min(ra),max(ra)),' %s/%s %.3f'%(B,T,st.median(rt)),' %s/%s %.3f'%(A,T,st.median(rb)))
