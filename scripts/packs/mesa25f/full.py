#!/usr/bin/env python3
"""The whole table of main's ctest entries on Mesa 25: the rows re-run here (results.tsv) at main's code,
the others as stale.tsv has them (mesa25e's table: code, CPU-s, Mesa 22 figure, test sources changed since)."""
def load(p):
    d = {}
    try:
        for l in open(p):
            c = l.rstrip('\n').split('\t'); d[c[0]] = c
    except FileNotFoundError:
        pass
    return d
r25, r22, st, ref = load('results.tsv'), load('results22.tsv'), load('stale.tsv'), load('refs22.tsv')
print('| ctest entry | last Mesa 25 run: code | result | Mesa 25 CPU-s | Mesa 22 CPU-s | test sources changed since that code (to 889dfda) |')
print('|---|---|---|---:|---:|---|')
for name, s in st.items():
    if name in r25:
        c = r25[name]
        m22 = f'{float(r22[name][2]):.1f} here' if name in r22 else (f'{ref[name][1]} {ref[name][2]}' if name in ref else '')
        print(f'| {name} | **889dfda** (mesa25f) | {c[1]} | {float(c[2]):.1f} | {m22} | |')
    else:
        code = 'never' if s[1] == 'never' else s[1]
        cpu = '' if s[2] == '-1' else s[2]
        ch = s[4]
        if ch == 'test_util.hpp':  # 8005d58's ScopedDispatchLimit only, used by none of this program's tests
            ch = 'no (test_util.hpp: ScopedDispatchLimit, unused here)'
        res = 'not run' if code == 'never' else ('skipped' if name == 'demo_chargpt_matches_torch' else 'pass')
        print(f'| {name} | {code} | {res} | {cpu} | {s[3]} | {ch} |')
