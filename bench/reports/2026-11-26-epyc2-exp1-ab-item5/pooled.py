"""Pools the staged/threaded pairs of every ab*.csv given: per client count,
the median, min and max of staged's mean response over threaded's within
one repetition, and how many pairs had staged lower."""
import collections
import statistics
import sys

ratios = collections.defaultdict(list)
for path in sys.argv[1:]:
    reps = collections.defaultdict(dict)
    for line in open(path):
        f = line.strip().split(',')
        if len(f) < 6 or not f[1].strip().isdigit():
            continue
        reps[(int(f[1]), int(f[2]))][f[0]] = float(f[4])
    for (clients, _), v in reps.items():
        if 'staged' in v and 'threaded' in v:
            ratios[clients].append(v['staged'] / v['threaded'])
print('clients,pairs,median,min,max,staged_lower')
for clients in sorted(ratios):
    x = sorted(ratios[clients])
    print('%d,%d,%.3f,%.3f,%.3f,%d' % (clients, len(x), statistics.median(x),
                                       x[0], x[-1], sum(a < 1 for a in x)))
