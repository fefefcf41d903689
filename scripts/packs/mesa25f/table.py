#!/usr/bin/env python3
"""Markdown rows: the entries re-run here (results.tsv, Mesa 25; results22.tsv, Mesa 22 in the same build, if any)
with their previous Mesa 25 run (stale.tsv: code, CPU-s, Mesa 22 reference, test sources changed since)."""
import sys
def load(p):
    d = {}
    try:
        for l in open(p):
            c = l.rstrip('\n').split('\t')
            d[c[0]] = c
    except FileNotFoundError:
        pass
    return d
r25, r22, st, ref = load('results.tsv'), load('results22.tsv'), load('stale.tsv'), load('refs22.tsv')
print('| ctest entry (main 889dfda) | Mesa 25 result | Mesa 25 CPU-s | wall s (nice 19) | Mesa 22 CPU-s (where) | ratio | previous Mesa 25 run: code, CPU-s | test sources changed since it |')
print('|---|---|---:|---:|---:|---:|---|---|')
for name, c in r25.items():
    cpu = float(c[2])
    m22 = r22.get(name)
    if m22:
        v, m22s = float(m22[2]), f'{float(m22[2]):.1f} here' + ('' if m22[1] == 'pass' else f' ({m22[1]})')
    elif name in ref:
        v, m22s = float(ref[name][1]), f'{ref[name][1]} {ref[name][2]}'
    else:
        v, m22s = 0.0, 'none'
    ratio = f'{cpu / v:.1f}x' if v >= 1.0 else ''
    s = st.get(name, [name, 'never', '-1', '', 'n/a'])
    prev = 'never' if s[1] == 'never' else f'{s[1]}, ' + (s[2] if s[2] != '-1' else 'no figure')
    print(f'| {name} | {c[1]} | {cpu:.1f} | {float(c[5]):.0f} | {m22s} | {ratio} | {prev} | {s[4]} |')
