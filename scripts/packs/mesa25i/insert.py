#!/usr/bin/env python3
# The section (section_head.md with tables.py's output) inserted after RESULTS.md's header.
import subprocess, sys
tab = subprocess.run(['python3', '/work/wt-mesa25i/scripts/packs/mesa25i/tables.py'], capture_output=True, text=True, check=True).stdout
parts = tab.rstrip('\n').split('\n')
summary = parts[-1]
tables = '\n'.join(parts[:-1]).rstrip('\n')
print(summary, file=sys.stderr)
vals = dict(x.split(' ', 1) for x in summary.split(', '))
rows = [l.rstrip('\n').split('\t') for l in open('/work/m25i/results.tsv')]
first = open('/work/m25i/q.out').readline().split()[0][:5]; last = rows[-1][-1][:5]
lo, hi = vals['load'].split('-')
done = {r[0] for r in rows}
r22 = [l for l in open('/work/m25i/results22.tsv') if l.strip()]
st = {l.split('\t')[0]: l.rstrip('\n').split('\t') for l in open('/work/m25i/stale.tsv')}
left = [l.split()[0] for l in open('/work/m25i/affected.txt') if l.split()[0] not in done]
notrun = ('Not reached by 08:45 (queued last): ' + ', '.join(f'{x} ({st[x][1]}, {st[x][2]} CPU-s)' for x in left) +
          ': their last Mesa 25 pass stays as shown.') if left else 'Every queued entry ran.'
import statistics
rat = [float(r[2]) / float(st[r[0]][2]) for r in rows if float(st[r[0]][2]) > 5]
lg = max(rows, key=lambda r: float(r[2]))
res = open('/work/m25i/result.md').read().strip().format(npass=vals['pass'], n=vals['rows'], distinct=vals['distinct'],
      nm22=len(r22), cpu=vals['CPU-s'], wall=vals['wall'].split()[-1], notrun=notrun, med=f'{statistics.median(rat):.2f}x', rng=f'{min(rat):.2f}-{max(rat):.2f}x', longest=f'{lg[0]} {float(lg[2]):.1f} CPU-s')
t1, t2 = tables.split('\n\n', 1)
text = open('/work/m25i/section_head.md').read().format(first=first, last=last, lo=lo, hi=hi, npass=vals['pass'], n=vals['rows'],
        distinct=vals['distinct'], result=res,
        tables='**On main ee5c5f0** (the rebuilt worktree, baa8b8a; entries after 08:01:31):\n\n' + t1.strip() +
               '\n\n**On 8315dcd** (07:40-08:01; for the entries not re-run above the same library code as ee5c5f0):\n\n' + t2.strip())
p = '/work/wt-mesa25i/bench/RESULTS.md'
lines = open(p).read().split('\n')
i = next(k for k, l in enumerate(lines) if l.startswith('## '))
open(p, 'w').write('\n'.join(lines[:i] + text.rstrip('\n').split('\n') + [''] + lines[i:]))
