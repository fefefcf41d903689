#!/usr/bin/env python3
"""rt39's Mesa 25 table: m25-results.tsv (this run) against Mesa 22 (the third clean-clone CI's release pass of
e8d5835 on this machine, cold, ctest -j2: its result and wall seconds, from its console log) and mesa25j's last
Mesa 25 figure of the same entry (scripts/packs/mesa25j/results*.tsv).
Usage: m25table.py m25-results.tsv CI_LOG [mesa25j results.tsv ...]"""
import re, sys

res = [l.rstrip('\n').split('\t') for l in open(sys.argv[1]) if l.strip()]
ci = {}
release = open(sys.argv[2], errors='replace').read().split('== sanitizer build')[0]
for m in re.finditer(r'Test +#\d+: (\S+) \.+\** *(\w+(?: \w+)?) +([\d.]+) sec', release):
    ci[m[1]] = (m[2], float(m[3]))
prev = {}
for f in sys.argv[3:]:
    for l in open(f):
        c = l.rstrip('\n').split('\t')
        if len(c) > 2:
            prev[c[0]] = c[2]
print('| ctest entry | Mesa 25 | CPU-s | wall s (nice 19) | Mesa 22 (CI of e8d5835): result, wall s | ratio | mesa25j CPU-s (1858833) |')
print('|---|---|---:|---:|---|---:|---:|')
tot = 0.0
for c in res:
    name, r, cpu, wall = c[0], c[1], float(c[2]), c[5]
    tot += cpu
    cr = ci.get(name)
    ratio = f'{cpu / cr[1]:.1f}x' if cr and cr[1] >= 1.0 else ''
    print(f'| {name} | {r} | {cpu:.1f} | {wall} | {cr[0].lower() + ", " + str(cr[1]) if cr else "-"} | {ratio} | {prev.get(name, "-")} |')
print(f'\n{len(res)} entries, {sum(1 for c in res if c[1] == "pass")} pass; {tot:.0f} CPU-s on Mesa 25')
