import csv,statistics as st,sys
rows=list(csv.DictReader(open(sys.argv[1])))
g={}
for r in rows: g.setdefault((r['clients'],r['name']),[]).append(r)
for k in sorted(g, key=lambda k:(int(k[0]),k[1])):
  v=g[k]
  print(k, 'n=%d eps %.0f mean_ms %.3f cpu_us/ev %.1f csw/ev %.2f'%((len(v),)+tuple(st.median(float(x[c]) for x in v) for c in ['events_per_s','mean_ms','cpu_us_per_event','csw_per_event'])))
