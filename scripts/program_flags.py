#!/usr/bin/env python3
"""Which variant flags (and pairs of them) a run's programs of one kernel cover, and whether a
change of the tests kept them: every program source that scripts/program_log.c logged (its src/)
is split into its register tile (the defines named by --tile) and its flags (every other #define
before the kernel's text, as NAME=VALUE).

  scripts/program_flags.py KERNEL_FILE BEFORE_DIR [AFTER_DIR] [--tile RB,CB,...] [--glsl GLSL_DIR]

BEFORE_DIR / AFTER_DIR: a log folder of scripts/suite_programs.sh (OUT/cold) or any folder with a src/
of logged sources. Prints per run the programs of KERNEL_FILE by tile; with AFTER_DIR, the flags, the
flag pairs and the (tile, flags) programs of BEFORE that AFTER lacks: a change that runs the tests at a
smaller register tile must leave the first two lists empty, and the tiles it keeps show in the third's
absence. The tile defaults to the register tile and the grid defines of the families generic in them:
RB, CB, RA, PX, BN, BM, LOCAL_X, LOCAL_Y, LOCAL_Z.
"""
import collections
import itertools
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sp = {'__name__': 'suite_programs'}
with open(os.path.join(here, 'suite_programs.py')) as f:
    exec(compile(f.read().replace('\nmain()\n', '\n'), 'suite_programs.py', 'exec'), sp)


def programs(d, family, firsts, tile):
    src = os.path.join(d, 'src') if os.path.isdir(os.path.join(d, 'src')) else d
    out = []
    for f in sorted(os.listdir(src)):
        if not f.endswith('.glsl'):
            continue
        name, defines = sp['name_of'](f[:-5], src, firsts, {})
        if name != family:
            continue
        t = tuple(sorted((k, v) for k, v in defines.items() if k in tile))
        flags = frozenset('%s=%s' % (k, v) for k, v in defines.items() if k not in tile)
        out.append((t, flags))
    return out


def main():
    args = sys.argv[1:]
    tile = {'RB', 'CB', 'RA', 'PX', 'BN', 'BM', 'LOCAL_X', 'LOCAL_Y', 'LOCAL_Z'}
    glsl = os.path.join(here, '..', 'glsl')
    for opt in ('--tile', '--glsl'):
        if opt in args:
            i = args.index(opt)
            if opt == '--tile':
                tile = set(args[i + 1].split(','))
            else:
                glsl = args[i + 1]
            del args[i:i + 2]
    if len(args) < 2:
        sys.exit(__doc__)
    family, dirs = args[0], args[1:3]
    firsts = sp['kernel_names'](glsl)
    runs = [programs(d, family, firsts, tile) for d in dirs]
    for d, progs in zip(dirs, runs):
        by_tile = collections.Counter(t for t, _ in progs)
        print('%s: %d programs of %s; by tile:' % (d, len(progs), family))
        for t, n in sorted(by_tile.items(), key=lambda kv: -kv[1]):
            print('  %4d  %s' % (n, ' '.join('%s=%s' % kv for kv in t) or '(none)'))
    if len(runs) < 2:
        return
    def cover(progs):
        flags = set().union(*[f for _, f in progs]) if progs else set()
        pairs = set()
        for _, f in progs:
            pairs.update(itertools.combinations(sorted(f), 2))
        return flags, pairs
    (fb, pb), (fa, pa) = cover(runs[0]), cover(runs[1])
    lost_f, lost_p = sorted(fb - fa), sorted(pb - pa)
    print('flags: before %d, after %d, lost %d%s' % (len(fb), len(fa), len(lost_f), ': ' + ' '.join(lost_f) if lost_f else ''))
    print('flag pairs: before %d, after %d, lost %d' % (len(pb), len(pa), len(lost_p)))
    for p in lost_p[:40]:
        print('  ' + ' & '.join(p))
    after = set((t, f) for t, f in runs[1])
    gone = collections.Counter(t for t, f in set(runs[0]) if (t, f) not in after)
    tiles_after = set(t for t, _ in runs[1])
    print('(tile, flags) programs of before not in after: %d; tiles of before not in after: %s' %
          (sum(gone.values()), ', '.join(' '.join('%s=%s' % kv for kv in t) for t in set(t for t, _ in runs[0]) - tiles_after) or 'none'))


main()
