#!/usr/bin/env python3
"""Where a cold ctest pass's CPU goes, program by program, from scripts/program_log.c's logs of a cold
pass and of a warm pass of the same entries (scripts/suite_programs.sh runs both).

  scripts/suite_programs.py COLD_DIR [WARM_DIR] [--glsl GLSL_DIR] [--top N] [--defines KERNEL_FILE]

A program's compile on llvmpipe: the CPU of its first dispatch in the cold pass less that of the
same dispatch in the warm pass (the same entry, program and occurrence; the warm pass loads every
program binary and finds LLVM's code in Mesa's shader cache). Without WARM_DIR the cold first
dispatches are taken whole (compile + one dispatch's run).
Prints: the processes' CPU cold and warm; the fixed cost of a process (its CPU before its first
program); the GLSL front end (glCompileShader + glLinkProgram); program binaries loaded and rejected;
duplicate compiles across processes (the same source compiled again: at the same time, by a
process of another GALLIVM_PERF (Mesa keys its shader cache and program binaries by it), or after
a rejected binary); compile CPU by kernel file and the costliest programs; the schedule's stretches
with a single process alive. --defines KERNEL_FILE (e.g. imatmul.comp): its programs' mean compile
by the value of each #define of the variant (those with 2 to 8 values), what makes a family costly.
"""
import collections
import glob
import os
import re
import sys


def read_rows(d):
    rows = []
    for line in open(os.path.join(d, 'log.tsv'), errors='replace'):
        c = line.rstrip('\n').split('\t')
        if len(c) == 7:
            rows.append(c)
    return rows


def read_log(rows, binmap):
    # binmap: program binary hash -> source hash, from every pass (a warm pass stores none)
    procs = collections.defaultdict(list)
    for pid, wall, ev, key, cpu, at, tag in rows:
        if ev == 'binmap':
            continue
        procs[pid].append(dict(wall=float(wall), ev=ev, key=key, cpu=float(cpu), at=float(at), tag=tag))
    for L in procs.values():
        L.sort(key=lambda e: e['wall'])
        tag = next((e['tag'] for e in L if e['ev'] != 'exit'), L[0]['tag'])
        for e in L:
            e['tag'] = tag
            if e['ev'] == 'dispatch' and e['key'].startswith('b:'):
                e['key'] = binmap.get(e['key'][2:], e['key'])
            if e['ev'].startswith('binary'):
                e['src'] = binmap.get(e['key'], 'b:' + e['key'])
    return procs


def kernel_names(glsl_dir):
    firsts = []
    for f in glob.glob(os.path.join(glsl_dir, '**', '*.comp'), recursive=True):
        for line in open(f):
            if line.strip():
                firsts.append((line.rstrip('\n'), os.path.basename(f)))
                break
    return firsts


def name_of(key, src_dir, firsts, cache={}):
    # (kernel file, the #defines before its text: the variant's), by the first line of each .comp
    if key in cache:
        return cache[key]
    name, defines = '?', {}
    try:
        text = open(os.path.join(src_dir, key + '.glsl'), errors='replace').read()
        best = None
        for first, f in firsts:
            i = text.find(first)
            if i >= 0 and (best is None or i < best[0]):
                best = (i, f)
        name = best[1] if best else ('probe' if 'u_n' in text else '?')
        defines = dict(re.findall(r'^#define (\w+)(?: (.*))?$', text[:best[0]] if best else '', re.M))
    except OSError:
        pass
    cache[key] = name, defines
    return cache[key]


def dispatches(procs):
    # (tag, key, occurrence in the process) -> first dispatch event
    out = {}
    for pid, L in procs.items():
        occ = collections.Counter()
        for e in L:
            if e['ev'] == 'dispatch':
                occ[e['key']] += 1
                e['pid'] = pid
                out[(e['tag'], e['key'], occ[e['key']])] = e
    return out


def main():
    args = sys.argv[1:]
    glsl = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'glsl')
    top = 30
    if '--glsl' in args:
        i = args.index('--glsl')
        glsl = args[i + 1]
        del args[i:i + 2]
    family = None
    if '--defines' in args:
        i = args.index('--defines')
        family = args[i + 1]
        del args[i:i + 2]
    if '--top' in args:
        i = args.index('--top')
        top = int(args[i + 1])
        del args[i:i + 2]
    cold_dir = args[0]
    warm_dir = args[1] if len(args) > 1 else None
    firsts = kernel_names(glsl)
    src_dir = os.path.join(cold_dir, 'src')
    rows = {d: read_rows(d) for d in (cold_dir, warm_dir) if d}
    binmap = {r[3]: r[6] for L in rows.values() for r in L if r[2] == 'binmap'}
    cold = read_log(rows[cold_dir], binmap)
    warm = read_log(rows[warm_dir], binmap) if warm_dir else {}
    perf = lambda e: e['tag'].split('|')[-2]

    def exit_cpu(procs):
        return {pid: max(e['at'] for e in L) for pid, L in procs.items()}

    ce, we = exit_cpu(cold), exit_cpu(warm)
    print('processes: cold %d (%.1f CPU-s at exit)' % (len(cold), sum(ce.values())), end='')
    print(', warm %d (%.1f CPU-s)' % (len(warm), sum(we.values())) if warm else '')
    # processes that made a program (the others: ctest's scripts, cmake, compilers, xvfb-run)
    gl = [L for L in cold.values() if any(e['ev'] != 'exit' for e in L)]
    fixed = [next(e['at'] - e['cpu'] for e in L if e['ev'] != 'exit') for L in gl]
    print('fixed cost of a process that made programs, its CPU before the first: mean %.3f CPU-s, sum %.1f over %d' %
          (sum(fixed) / max(1, len(fixed)), sum(fixed), len(fixed)))
    ev = collections.Counter()
    evcpu = collections.Counter()
    for L in cold.values():
        for e in L:
            ev[e['ev']] += 1
            evcpu[e['ev']] += e['cpu']
    print('GLSL front end (compile events): %d, %.1f CPU-s; binaries loaded %d (%.1f CPU-s), rejected %d' %
          (ev['compile'], evcpu['compile'], ev['binary_ok'], evcpu['binary_ok'], ev['binary_rejected']))

    cd, wd = dispatches(cold), dispatches(warm)
    comp = {}
    for k, e in cd.items():
        w = wd.get(k)
        comp[k] = max(0.0, e['cpu'] - w['cpu']) if w else (e['cpu'] if not warm else None)
    paired = [v for v in comp.values() if v is not None]
    if warm:
        print('first dispatches: %d cold, %d paired with the warm pass; compile (cold - warm) %.1f CPU-s' %
              (len(cd), len(paired), sum(paired)))
    else:
        print('first dispatches: %d, %.1f CPU-s (no warm pass: compile + one dispatch each)' % (len(cd), sum(paired)))

    # Duplicates: every first dispatch in time order; the first of a (source, GALLIVM_PERF) compiles,
    # a later one of the same pair during that compile is a race; one of a pair whose source another
    # GALLIVM_PERF compiled first is a second compile by mode.
    order = sorted(cd.items(), key=lambda kv: kv[1]['wall'])
    first = {}
    modes = collections.defaultdict(set)  # source -> the GALLIVM_PERF values that compiled it
    firsts_cpu = 0.0
    race, cross = [], []
    for k, e in order:
        c = comp[k] or 0.0
        pk = (e['key'], perf(e))
        if pk in first:
            f = first[pk]
            if e['wall'] - e['cpu'] < f['wall'] and e['pid'] != f['pid']:
                race.append((k, c))
            continue
        if modes[e['key']]:
            cross.append((k, c))
        else:
            firsts_cpu += c
        first[pk] = e
        modes[e['key']].add(perf(e))
    print('compiles of distinct sources: %.1f CPU-s; again in another GALLIVM_PERF: %d, %.1f CPU-s; '
          'races (the same source and mode at once): %d, %.1f CPU-s' %
          (firsts_cpu, len(cross), sum(c for _, c in cross), len(race), sum(c for _, c in race)))
    srcs = collections.defaultdict(list)
    for pid, L in cold.items():
        for e in L:
            if e['ev'] == 'compile':
                srcs[e['key']].append(e)
    again = sum(len(v) - 1 for v in srcs.values())
    print('sources compiled by more than one process: %d (%d extra GLSL compiles, %.1f CPU-s)' %
          (sum(len(v) > 1 for v in srcs.values()), again,
           sum(sum(x['cpu'] for x in sorted(v, key=lambda x: x['wall'])[1:]) for v in srcs.values())))

    by_kernel = collections.defaultdict(lambda: [0.0, 0, set()])
    by_prog = collections.defaultdict(lambda: [0.0, 0, set()])
    for k, c in comp.items():
        if c is None:
            continue
        n = name_of(k[1], src_dir, firsts)[0]
        by_kernel[n][0] += c
        by_kernel[n][1] += 1
        by_kernel[n][2].add(k[1])
        by_prog[(n, k[1])][0] += c
        by_prog[(n, k[1])][1] += 1
        by_prog[(n, k[1])][2].add(k[0].split(' ')[0])
    print('\ncompile CPU by kernel file (CPU-s, first dispatches, distinct sources):')
    for n, (c, cnt, keys) in sorted(by_kernel.items(), key=lambda kv: -kv[1][0])[:top]:
        print('  %-28s %7.1f %5d %5d' % (n, c, cnt, len(keys)))
    print('\ncostliest programs (compile CPU-s summed over the processes that compiled them):')
    for (n, key), (c, cnt, exes) in sorted(by_prog.items(), key=lambda kv: -kv[1][0])[:top]:
        print('  %6.2f x%-3d %-24s %s  %s' % (c, cnt, n, key, ','.join(sorted(exes))[:60]))

    if family:
        # the first compile of each source of the family (later ones may be cache hits)
        seen, data = set(), []
        for k, e in order:
            n, defines = name_of(k[1], src_dir, firsts)
            if n == family and k[1] not in seen and comp[k] is not None:
                seen.add(k[1])
                data.append((comp[k], defines))
        print('\n%s: %d sources, mean compile %.2f CPU-s; by #define value (mean CPU-s, sources):' %
              (family, len(data), sum(c for c, _ in data) / max(1, len(data))))
        names = collections.Counter(d for _, defines in data for d in defines)
        for d, _ in names.most_common():
            g = collections.defaultdict(list)
            for c, defines in data:
                g[defines.get(d, '(unset)')].append(c)
            if 2 <= len(g) <= 8:
                print('  %-18s %s' % (d, '  '.join('%s: %.2f (%d)' % (v[:16], sum(x) / len(x), len(x))
                                                    for v, x in sorted(g.items()))))

    print('\nprocesses by cold CPU (cold, warm, compile):')
    tagcpu = collections.defaultdict(lambda: [0.0, 0.0, 0.0])
    for pid, L in cold.items():
        tagcpu[L[0]['tag']][0] += ce[pid]
    for pid, L in warm.items():
        tagcpu[L[0]['tag']][1] += we[pid]
    for k, c in comp.items():
        if c is not None:
            tagcpu[k[0]][2] += c
    for t, (c, w, p) in sorted(tagcpu.items(), key=lambda kv: -kv[1][0])[:top]:
        print('  %6.1f %6.1f %6.1f  %s' % (c, w, p, t[:90]))

    for name, procs in (('cold', cold), ('warm', warm)):
        if not procs:
            continue
        iv = [(min(e['wall'] for e in L), max(e['wall'] for e in L)) for L in procs.values()]
        evs = sorted([(s, 1) for s, _ in iv] + [(e, -1) for _, e in iv])
        n, prev, alone = 0, evs[0][0], 0.0
        for t, d in evs:
            if n == 1:
                alone += t - prev
            n, prev = n + d, t
        print('%s: %.0f s from the first process to the last, %.0f s with a single process alive' %
              (name, evs[-1][0] - evs[0][0], alone))


main()
