#!/usr/bin/env python3
"""Each ctest entry of main's build (/work/wt-mesa25f at main): the code of its last Mesa 25 pass (mesa25e's table
in bench/RESULTS.md, 2026-11-27 21:30-22:47), its Mesa 25 / Mesa 22 CPU-s there, and the test sources (program .cpp +
tests/ headers it includes) changed since that code to HEAD. Entries not in the table: 'never'."""
import os, re, subprocess, json
W = os.environ.get('WT', '/work/wt-mesa25f'); T = W + '/tests'
# The table read: mesa25e's by default; SECTION=mesa25f: mesa25f's whole table (2026-11-28, 00:27-01:48), as mesa25g used it;
# SECTION=mesa25g: mesa25g's whole table (2026-11-28, 02:02-02:47), as mesa25h used it.
SECTIONS = {'mesa25e': '## 2026-11-27, 21:30-22:47 UTC — llvmpipe of Mesa 25', 'mesa25f': '## 2026-11-28, 00:27-01:48 UTC — llvmpipe of Mesa 25',
            'mesa25g': '## 2026-11-28, 02:02-02:47 UTC — llvmpipe of Mesa 25', 'mesa25h': '## 2026-11-28, 04:56-05:48 UTC — llvmpipe of Mesa 25'}
# SECTION=mesa25g,mesa25h (as mesa25i used it): the sections in turn, a later one's rows replacing an earlier one's. A re-run table
# (header "| ctest entry (main CODE) | Mesa 25 result | Mesa 25 CPU-s | wall s | Mesa 22 CPU-s |", mesa25h's only table) gives CODE.
lines = open(W + '/bench/RESULTS.md').read().split('\n')
rows = {}
for sec in os.environ.get('SECTION', 'mesa25e').split(','):
    start = next(i for i, l in enumerate(lines) if l.startswith(SECTIONS[sec]))
    rerun = None
    for l in lines[start + 1:]:
        if l.startswith('## '): break
        h = re.match(r'\| ctest entry \(main ([0-9a-f]{7})\) \|', l)
        if l.startswith('| ctest entry'):
            rerun = h.group(1) if h else None
            continue
        m = re.match(r'\| (\S+) \| ([^|]+) \| ([^|]+) \| ([^|]*) \| ([^|]*) \|', l)
        if m and m.group(1) != '---':
            g = [x.strip() for x in m.groups()]
            rows[g[0]] = [g[0], rerun, g[1], g[2], g[4]] if rerun else g
tests = json.loads(subprocess.run(['ctest', '--test-dir', W + '/build', '--show-only=json-v1'], capture_output=True, text=True).stdout)['tests']
def find(name):
    for root, _, files in os.walk(T):
        if name in files: return os.path.join(root, name)
def deps(path, seen):
    if path in seen or not path: return
    seen.add(path)
    for inc in re.findall(r'#include "([^"]+)"', open(path).read()):
        for cand in (os.path.join(os.path.dirname(path), inc), os.path.join(T, inc)):
            if os.path.exists(cand): deps(os.path.normpath(cand), seen); break
for t in tests:
    name = t['name']
    r = rows.get(name)
    if not r:
        print(f'{name}\tnever\t-1\t\tn/a'); continue
    _, code, res, m25, m22 = r
    mm = re.search(r'\b([0-9a-f]{7})\b', code)
    c = mm.group(1)
    binary = re.sub(r'_(check_loops|staging_copy|host_io_copy)$', '', name)
    if 'command' in t and os.path.basename(t['command'][0]).startswith('test_'):
        binary = os.path.basename(t['command'][0])
    src = find(binary + '.cpp') if binary.startswith('test_') else None
    ch = 'n/a'
    if src:
        s = set(); deps(src, s)
        rel = [os.path.relpath(p, W) for p in s]
        ch = ','.join(os.path.basename(x) for x in subprocess.run(['git', '-C', W, 'diff', '--name-only', c, 'HEAD', '--'] + rel, capture_output=True, text=True).stdout.split()) or 'no'
    cpu = re.match(r'[\d.]+', m25); cpu = float(cpu.group()) if cpu else -1
    print(f'{name}\t{c}\t{cpu}\t{m22}\t{ch}')
