#!/usr/bin/env python3
"""Rewrites a fabret workload so that each subscription with two equalities
or more is reached through its two rarest equalities together.

  pairify.py IN OUT

The two equalities (a = v, b = w, a < b) become one equality on a synthetic
attribute, a(32 + 32 * a + b) = v * domain + w, and every event also carries
that attribute's value for each pair of its attributes (16 attributes: 120
more). Rarest: the fewest subscriptions with that equality. Every event
matches the same subscriptions as before (the README checks the counts)."""
import re
import sys
from collections import Counter

src, dst = sys.argv[1], sys.argv[2]
lines = open(src).read().split('\n')
knobs = next(l for l in lines if l.startswith('# knobs'))
attributes = int(re.search(r'attributes=(\d+)', knobs).group(1))
domain = int(re.search(r'domain=(\d+)', knobs).group(1))
WIDTH = {'BETWEEN': 4, 'EXISTS': 2, 'NOT_EXISTS': 2}


def predicates(line):
    t = line.split()
    out, i = [], 2
    while i < len(t):
        n = WIDTH.get(t[i + 1], 3)
        out.append(t[i:i + n])
        i += n
    return out


def pair_attribute(a, b):
    return attributes + a * attributes + b


subs = [predicates(l) for l in lines if l.startswith('S ')]
count = Counter((p[0], p[2]) for s in subs for p in s if p[1] == 'EQ')
out, at, paired = [], 0, 0
for line in lines:
    if line.startswith('S '):
        s = subs[at]
        at += 1
        eqs = [k for k, p in enumerate(s) if p[1] == 'EQ']
        if len(eqs) >= 2:
            eqs.sort(key=lambda k: (count[(s[k][0], s[k][2])], k))
            x, y = sorted((s[eqs[0]], s[eqs[1]]), key=lambda p: int(p[0][1:]))
            pair = ['a%d' % pair_attribute(int(x[0][1:]), int(y[0][1:])), 'EQ',
                    str(int(x[2]) * domain + int(y[2]))]
            s = [pair] + [p for k, p in enumerate(s) if k not in eqs[:2]]
            paired += 1
        out.append('S %d %s' % (len(s), ' '.join(' '.join(p) for p in s)))
    elif line.startswith('E '):
        t = line.split()
        n = int(t[1])
        values = [(int(t[2 + 2 * k][1:]), int(t[3 + 2 * k])) for k in range(n)]
        extra = ['a%d %d' % (pair_attribute(a, b), v * domain + w)
                 for a, v in values for b, w in values if a < b]
        out.append(' '.join(['E', str(n + len(extra))] + t[2:2 + 2 * n] +
                            extra + t[2 + 2 * n:]))
    else:
        out.append(line)
open(dst, 'w').write('\n'.join(out))
print('paired %d of %d subscriptions' % (paired, len(subs)), file=sys.stderr)
