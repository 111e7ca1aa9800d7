# Shifts a cohort-workload v1 file's constants and event values by
# 1,700,000,000,000 (epoch milliseconds), so that every bound is past int32:
#   python3 shift.py IN OUT
import sys
OFF = 1_700_000_000_000
out = open(sys.argv[2], 'w')
for line in open(sys.argv[1]):
    if line[0] in 'SE':
        t = line.split()
        for i in range(2, len(t)):
            x = t[i]
            if x[0].isdigit() or (x[0] == '-' and x[1:].isdigit()):
                t[i] = str(int(x) + OFF)
        out.write(' '.join(t) + '\n')
    else:
        out.write(line.replace('preset=ranges-1m', 'preset=ranges-1m-shifted') if line.startswith('# cohort') else line)
