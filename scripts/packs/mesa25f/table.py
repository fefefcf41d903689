#!/usr/bin/env python3
"""Markdown rows (with --full: the whole table of main's ctest entries, the others as stale.tsv has them): the entries re-run here (results.tsv, Mesa 25; results22.tsv, Mesa 22 in the same build, if any)
with their previous Mesa 25 run (stale.tsv: code, CPU-s, Mesa 22 reference, test sources changed since)."""
import os, sys
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
# The re-run's code and helper (mesa25g: CODE=a0efcc8 LABEL=mesa25g); the Mesa 22 figure: refs22.tsv's, else stale.tsv's.
CODE, LABEL = os.environ.get('CODE', '889dfda'), os.environ.get('LABEL', 'mesa25f')
for name, s in st.items():
    if name not in ref and s[3]:
        ref[name] = [name] + s[3].split(' ', 1)


def rerun():
    print(f'| ctest entry (main {CODE}) | Mesa 25 result | Mesa 25 CPU-s | wall s (nice 19) | Mesa 22 CPU-s (where) | ratio | previous Mesa 25 run: code, CPU-s | test sources changed since it |')
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


def full():
    print(f'| ctest entry | last Mesa 25 run: code | result | Mesa 25 CPU-s | Mesa 22 CPU-s | test sources changed since that code (to {CODE}) |')
    print('|---|---|---|---:|---:|---|')
    for name, s in st.items():
        if name in r25:
            c = r25[name]
            m22 = f'{float(r22[name][2]):.1f} here' if name in r22 else (f'{ref[name][1]} {ref[name][2]}' if name in ref else '')
            print(f'| {name} | **{CODE}** ({LABEL}) | {c[1]} | {float(c[2]):.1f} | {m22} | |')
        else:
            code = 'never' if s[1] == 'never' else s[1]
            cpu = '' if s[2] == '-1' else s[2]
            ch = s[4]
            if ch == 'test_util.hpp':  # 8005d58's ScopedDispatchLimit only, used by none of this program's tests
                ch = 'no (test_util.hpp: ScopedDispatchLimit, unused here)'
            res = 'not run' if code == 'never' else ('skipped' if name == 'demo_chargpt_matches_torch' else 'pass')
            print(f'| {name} | {code} | {res} | {cpu} | {s[3]} | {ch} |')


full() if '--full' in sys.argv else rerun()
