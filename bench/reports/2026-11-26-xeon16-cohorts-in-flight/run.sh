#!/bin/bash
# kBuffers variants of the partitioned pipeline, P cores at once.
b=$(cd "$(dirname "$0")" && pwd)
w=/tmp/kprobe.workload
"$b/bin/cohort" workload --preset=fabret-1m --events=${EVENTS:-16000} --out=$w >/dev/null
echo "variant,p,rep,match_seconds,matches"
for rep in 1 2 3; do
  for p in ${PS:-8 16}; do
    for v in bin k4 k8; do
      "$b/$v/locality_probe" --workload=$w --partitions=$p --layout=partitioned --cohort_max=64 --threads |
        python3 -c "import json,sys; d=json.load(sys.stdin); print('$v,$p,$rep,%s,%s' % (d['match_seconds'], d['matches']))"
    done
  done
done
