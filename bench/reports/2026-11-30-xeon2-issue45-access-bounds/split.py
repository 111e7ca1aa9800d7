#!/usr/bin/env python3
"""Splits a fabret workload file by how many equalities a subscription has.

  split.py IN OUT_PREFIX
writes OUT_PREFIX-le1.txt (none or one), -0.txt (none) and -1.txt (exactly
one), each with every event of IN and its knobs line's subscription count
set to what it holds."""
import sys

src, prefix = sys.argv[1], sys.argv[2]
header, subs, events = [], [], []
for line in open(src):
    if line.startswith('S '):
        subs.append((line.count(' EQ '), line))
    elif line.startswith('E '):
        events.append(line)
    else:
        header.append(line)
for name, keep in (('le1', lambda n: n <= 1), ('0', lambda n: n == 0),
                   ('1', lambda n: n == 1)):
    kept = [line for n, line in subs if keep(n)]
    head = [h.replace('subscriptions=%d' % len(subs),
                      'subscriptions=%d' % len(kept)) for h in header]
    with open('%s-%s.txt' % (prefix, name), 'w') as out:
        out.write(''.join(head + kept + events))
    print(name, len(kept), file=sys.stderr)
