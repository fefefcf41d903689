#!/usr/bin/env python3
"""mesa25i's RESULTS tables from /work/m25i (or RUN): results.tsv split at the rebuild (rows ending before SWITCH ran
8315dcd's binaries, the later ones baa8b8a's, i.e. main ee5c5f0), each part through mesa25f's table.py with
results22.tsv and stale.tsv; then the run's totals and load range."""
import os, subprocess, tempfile, shutil
RUN = os.environ.get('RUN', '/work/m25i')
SWITCH = os.environ.get('SWITCH', '08:01:20')
TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'mesa25f', 'table.py')
rows = [l for l in open(os.path.join(RUN, 'results.tsv')) if l.strip()]
parts = [('ee5c5f0', 'mesa25i', [r for r in rows if r.rstrip('\n').split('\t')[-1] >= SWITCH]),
         ('8315dcd', 'mesa25i', [r for r in rows if r.rstrip('\n').split('\t')[-1] < SWITCH])]
for code, label, part in parts:
    d = tempfile.mkdtemp()
    open(os.path.join(d, 'results.tsv'), 'w').writelines(part)
    for f in ('results22.tsv', 'stale.tsv'):
        shutil.copy(os.path.join(RUN, f), d)
    out = subprocess.run(['python3', TABLE], cwd=d, capture_output=True, text=True, check=True,
                         env=dict(os.environ, CODE=code, LABEL=label)).stdout
    print(out)
    shutil.rmtree(d)
c = [r.rstrip('\n').split('\t') for r in rows]
loads = [float(l.split()[1]) for l in open(os.path.join(RUN, 'load.txt')) if l.split()[0] <= c[-1][-1]]
print(f'rows {len(c)}, pass {sum(r[1] == "pass" for r in c)}, CPU-s {sum(float(r[2]) for r in c):.0f}, wall s {sum(float(r[5]) for r in c):.0f}, '
      f'distinct {len({r[0] for r in c})}, load {min(loads):.1f}-{max(loads):.1f}')
