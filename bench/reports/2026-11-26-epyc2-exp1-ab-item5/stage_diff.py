"""Per-stage wait and service means of the run between two `cohort stats
--json` snapshots: stage_diff.py BEFORE.json AFTER.json."""
import json
import sys

before = {s['name']: s for s in json.load(open(sys.argv[1]))['stages']}
for s in json.load(open(sys.argv[2]))['stages']:
    old = before.get(s['name'], {})
    out = [s['name']]
    for key in ('wait', 'service'):
        a, b = s.get(key, {}), old.get(key, {})
        ca, cb = int(a.get('count', 0)), int(b.get('count', 0))
        if ca > cb:
            mean = (a['meanUs'] * ca - b.get('meanUs', 0) * cb) / (ca - cb)
            out.append('%s n=%d mean=%.1fus' % (key, ca - cb, mean))
    print(' | '.join(out))
