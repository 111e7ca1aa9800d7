import numpy as np, re
rates={}
for p in ['fabret-1m','selective-1m','ranges-1m']:
    for k in ['per_event','masks']:
        for l in open(f'/tmp/fit-{p}-{k}.txt'):
            m=re.match(r'cohort_max (\d+)\s+(\d+) events/s',l)
            if m: rates[(p,k,int(m.group(1)))]=float(m.group(2))
comp={}
for p in ['fabret-1m','selective-1m','ranges-1m']:
    rows=[list(map(float,l.split()[1:])) for l in open(f'/tmp/md-{p}.txt')]
    a=np.array(rows)
    for n in [4,8,16,32]:
        sel=a[a[:,0]==n]
        comp[(p,n)]=sel[:,1:].mean(axis=0)  # rows_sum lead_rows_sum positions_sum positions_all rows_union rows_present
        print(p,n,len(sel),' '.join('%.0f'%x for x in comp[(p,n)]))
# per-cohort times in ns
X_pe=[];y_pe=[];X_m=[];y_m=[];keys=[]
for p in ['fabret-1m','selective-1m','ranges-1m']:
    for n in [4,8,16,32]:
        rs,lr,ps,pa,ru,rp=comp[(p,n)]
        tpe=n/rates[(p,'per_event',n)]*1e9; tm=n/rates[(p,'masks',n)]*1e9
        uncached = p=='ranges-1m'
        X_pe.append([rs, lr if not uncached else 0, lr if uncached else 0, ps]); y_pe.append(tpe)
        X_m.append([ru, pa]); y_m.append(tm); keys.append((p,n))
X_pe=np.array(X_pe);y_pe=np.array(y_pe);X_m=np.array(X_m);y_m=np.array(y_m)
# relative least squares: weight by 1/y
from scipy.optimize import nnls
cpe,_=nnls(X_pe/y_pe[:,None], np.ones(len(y_pe)))
cm,_=nnls(X_m/y_m[:,None], np.ones(len(y_m)))
print('per-event coeffs (row, lead row cached, lead row uncached, position):', cpe)
print('masks coeffs (row union, position all):', cm)
cur_pe=np.array([4.0,4.0,1.0,0.075]); cur_m=np.array([8.0,1.5])
for i,(p,n) in enumerate(keys):
    real=y_pe[i]/y_m[i]
    fit=(X_pe[i]@cpe)/(X_m[i]@cm)
    cur=(X_pe[i]@cur_pe)/(X_m[i]@cur_m)
    print(f'{p:13s} {n:3d} real {real:.2f} fit {fit:.2f} current {cur:.2f}   pe {y_pe[i]/1e3:.0f}us m {y_m[i]/1e3:.0f}us')
