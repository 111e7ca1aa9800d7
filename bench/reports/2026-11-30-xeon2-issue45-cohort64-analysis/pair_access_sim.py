#!/usr/bin/env python3
"""How many equality-cluster rows a cohort would visit with pair access.

Reads a workload file (bench:workload --preset=fabret-1m --events=6400
--out=FILE) and, for cohorts of 64 consecutive events, counts:
  - single access (today): rows whose access equality (the subscription's
    rarest EQ, by how many subscriptions hold it) some event satisfies;
  - pair access: rows of subscriptions with two EQs or more whose two rarest
    both hold in one event, plus rows with exactly one EQ (still single);
  - the pair lists hit, and the pair lookups (64 events x 16*15/2 pairs).
Subscriptions without an EQ (lead rows) are left out of both.

  pair_access_sim.py FILE [COHORTS]   # default 40 cohorts
"""
import collections
import sys


def main():
    path = sys.argv[1]
    cohorts = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    subs, events = [], []
    for line in open(path):
        if line[0] == 'S':
            t = line.split()
            i, eqs = 2, []
            while i < len(t):
                attr, op = t[i], t[i + 1]
                if op == 'EQ':
                    eqs.append((attr, int(t[i + 2])))
                    i += 3
                elif op == 'BETWEEN':
                    i += 4
                else:
                    i += 3
            subs.append(eqs)
        elif line[0] == 'E':
            t = line.split()
            events.append({(t[i], int(t[i + 1])) for i in range(2, len(t), 2)})
    freq = collections.Counter(p for s in subs for p in s)
    single, pair, one = (collections.Counter() for _ in range(3))
    lead = 0
    for s in subs:
        if not s:
            lead += 1
            continue
        s = sorted(s, key=lambda p: freq[p])
        single[s[0]] += 1
        if len(s) >= 2:
            pair[frozenset(s[:2])] += 1
        else:
            one[s[0]] += 1
    print('subscriptions', len(subs), 'without an EQ', lead,
          'with one EQ', sum(one.values()), 'with two or more',
          sum(pair.values()), 'distinct pairs', len(pair))
    n = tot_single = tot_pair = tot_one = lists = 0
    for c in range(0, min(len(events), 64 * cohorts), 64):
        cohort = events[c:c + 64]
        satisfied = set().union(*cohort)
        tot_single += sum(single[p] for p in satisfied)
        tot_one += sum(one[p] for p in satisfied)
        pairs = set()
        for e in cohort:
            el = sorted(e)
            for i in range(len(el)):
                for j in range(i + 1, len(el)):
                    pairs.add(frozenset((el[i], el[j])))
        hit = [pair[p] for p in pairs if p in pair]
        tot_pair += sum(hit)
        lists += len(hit)
        n += 1
    print('per cohort of 64: single access', round(tot_single / n),
          'rows | pair access', round(tot_pair / n), 'rows in',
          round(lists / n), 'pair lists, plus', round(tot_one / n),
          'rows with one EQ | pair lookups', 64 * 120)


if __name__ == '__main__':
    main()
