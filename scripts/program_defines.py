#!/usr/bin/env python3
"""Which defines make one kernel's programs distinct? Counts a run's compiles of KERNEL.

Run a test or tool with the sources printed on stderr (every new program: "==== <kernel file>",
then its source), from an empty program cache:

  GLTENSOR_CACHE_DIR=$(mktemp -d) GLTENSOR_DUMP_SOURCE=.comp build/tests/test_ocr_models 2>dump.txt
  scripts/program_defines.py dump.txt conv_direct.comp [PX,SEGLEN ...]

Prints the run's programs and KERNEL's, each `#define NAME VALUE` the variant set (the lines after
common.glsl's LOOP(cond), operand macros and the kernel's own derived macros included) with its
values and how many compiles had each, then how many distinct programs remain with each define
left out (the defines whose values split the programs most: the ones worth making uniforms or
bucketing), and without each comma-separated group given (a define and those derived from it:
PX,SEGLEN,NQ). Function-like macros that only write out a define's value (lists such as the ubo
layout's PXS_I(X, a)) are left out of the keys; ACT(x) and other expressions stay.
"""
import collections
import re
import sys


def compiles(path, kernel):
    text = open(path, errors="replace").read()
    chunks = text.split("\n==== ")
    chunks[0] = chunks[0][5:] if chunks[0].startswith("==== ") else ""
    progs = [c for c in chunks if c]
    mine = []
    for c in progs:
        name, _, src = c.partition("\n")
        if name.strip() != kernel:
            continue
        d = {}
        lx = re.search(r"^#define LOCAL_X (\S+)", src, re.M)
        d["LOCAL_X"] = lx.group(1) if lx else "?"
        body = src.split("#define LOOP(cond) (cond)", 1)[-1]
        for m in re.finditer(r"^#define (\w+)(\([^)]*\))?(?: (.*))?$", body, re.M):
            value = (m.group(3) or "").strip()
            if m.group(2) and re.fullmatch(r"(X\([\w, ]*\d+\) ?)+", value):
                continue  # a list written out from a define's value
            d.setdefault(m.group(1) + (m.group(2) or ""), value)
        mine.append(d)
    return len(progs), mine


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    total, mine = compiles(sys.argv[1], sys.argv[2])
    key = lambda d, drop=(): tuple(sorted((k, v) for k, v in d.items() if k not in drop))
    print(f"{total} programs, {len(mine)} of {sys.argv[2]}, {len(set(map(key, mine)))} distinct")
    names = sorted({k for d in mine for k in d})
    for n in names:
        vals = collections.Counter(d.get(n, "(unset)") for d in mine)
        if len(vals) > 1:
            shown = ", ".join(f"{v[:24]}: {c}" for v, c in vals.most_common(12))
            print(f"  {n}: {len(vals)} values ({shown}{', ...' if len(vals) > 12 else ''})")
    print("distinct without one define:")
    rows = [(len(set(key(d, (n,)) for d in mine)), n) for n in names]
    for count, n in sorted(rows)[:12]:
        print(f"  {n}: {count}")
    for group in sys.argv[3:]:
        print(f"  {group}: {len(set(key(d, tuple(group.split(','))) for d in mine))}")


if __name__ == "__main__":
    main()
