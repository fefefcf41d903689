#!/usr/bin/env python3
"""mesa25j's RESULTS table from the run folder RUN (default /work/m25j): each entry of results.tsv (Mesa 25) with its
reason (affected.txt), its Mesa 22 result and wall seconds in the lead's clean-clone CI of 58d1060 (ci22.tsv, taken from
/tmp/ci2.log's release pass: cold, ctest -j2, this machine, quiet; the library code of main 1858833), the ratio Mesa 25
CPU-s / Mesa 22 wall-s (rough: wall under -j2 against CPU), and its last Mesa 25 CPU (prev25.tsv: mesa25g/h/i).
Then one summary line (rows, passes, CPU-s, wall-s, load range while it ran)."""
import os
RUN = os.environ.get('RUN', '/work/m25j')
HERE = os.path.dirname(os.path.abspath(__file__))
def load(p):
    return {c[0]: c for c in (l.rstrip('\n').split('\t') for l in open(p)) if c and c[0]}
r25 = [l.rstrip('\n').split('\t') for l in open(os.path.join(RUN, 'results.tsv')) if l.strip()]
why, ci, prev = load(os.path.join(HERE, 'affected.txt')), load(os.path.join(HERE, 'ci22.tsv')), load(os.path.join(HERE, 'prev25.tsv'))
print('| ctest entry | why | Mesa 25 | CPU-s | wall s (nice 19) | Mesa 22 (CI, 58d1060): result, wall s | ratio | last Mesa 25 CPU-s (where) |')
print('|---|---|---|---:|---:|---|---:|---|')
for c in r25:
    n, cpu = c[0], float(c[2])
    m = ci.get(n)
    m22 = f'{m[1].lower().strip("*")}, {float(m[2]):.1f}' if m else 'not in CI'
    ratio = f'{cpu / float(m[2]):.1f}x' if m and float(m[2]) >= 1.0 and cpu >= 1.0 else ''
    p = prev.get(n)
    last = 'never (new entry)' if not p or p[1] == '-' else f'{float(p[2]):.1f} ({p[4]})'
    print(f'| {n} | {why[n][2] if n in why else ""} | {c[1]} | {cpu:.1f} | {float(c[5]):.0f} | {m22} | {ratio} | {last} |')
t0, t1 = r25[0][-1], r25[-1][-1]
loads = [float(l.split()[1]) for l in open(os.path.join(RUN, 'load.txt')) if l.split()[0] <= t1]
print(f'rows {len(r25)}, pass {sum(c[1] == "pass" for c in r25)}, CPU-s {sum(float(c[2]) for c in r25):.0f}, '
      f'wall s {sum(float(c[5]) for c in r25):.0f}, load {min(loads):.1f}-{max(loads):.1f}')
# The brief's step 3: each helper branch's entries (results-NAME.tsv; the commit from branches.out's last build of it
# before the entry ended).
import glob, sys
if '--branches' in sys.argv:
    builds = [l.split() for l in open(os.path.join(RUN, 'branches.out')) if ' built' not in l]
    print('\n| branch (commit) | ctest entry | Mesa 25 | CPU-s | wall s |')
    print('|---|---|---|---:|---:|')
    for f in sorted(glob.glob(os.path.join(RUN, 'results-*.tsv'))):
        b = os.path.basename(f)[8:-4]
        seen = {}
        for c in (l.rstrip('\n').split('\t') for l in open(f) if l.strip()):
            starts = [x for x in open(os.path.join(RUN, 'q.out')) if x.rstrip('\n').endswith(f'start B:{b} {c[0]}')]
            k = seen[c[0]] = seen.get(c[0], -1) + 1
            t = starts[k].split()[0] if k < len(starts) else c[-1]
            commit = [x[2].rstrip(':') for x in builds if x[1] == b and x[0] <= t][-1]
            print(f'| {b} ({commit}) | {c[0]} | {c[1]} | {float(c[2]):.1f} | {float(c[5]):.0f} |')
