#!/usr/bin/env python3
"""rt40's attention table: attn-{block1,block0,branch,main}-{round}.txt of gltensor_attention_bench in one folder.
Per case: the GPU us per call (the lowest of the rounds) under GLTENSOR_ATTENTION_BLOCK=1 and =0, their ratio
(block / the other: < 1 the block kernel is faster), the wall us per call likewise, and the kernel each default
(the branch's, main's) chose with its GPU us. Then the cases where a default takes the block kernel though it is
slower, and where it does not though it is faster by more than 10 %.
  python3 attn_table.py LOGDIR
  python3 attn_table.py result.txt   (run.sh's "a VARIANT-ROUND CASE KERNEL GPU_US WALL_US" lines)"""
import collections, glob, os, re, sys

d = sys.argv[1]
runs = collections.defaultdict(lambda: collections.defaultdict(list))  # variant -> case -> [(gpu, wall, kernel)]
pat = re.compile(r"^case (\S+) kernel (\S+) gpu_us ([\d.]+) wall_us ([\d.]+)")
if os.path.isfile(d):
    for line in open(d):
        w = line.split()
        if len(w) == 6 and w[0] == "a":
            runs[w[1].split("-")[0]][w[2]].append((float(w[4]), float(w[5]), w[3]))
for f in sorted(glob.glob(os.path.join(d, "attn-*-*.txt"))) if os.path.isdir(d) else []:
    v = os.path.basename(f).split("-")[1]
    for line in open(f):
        m = pat.match(line)
        if m:
            runs[v][m.group(1)].append((float(m.group(3)), float(m.group(4)), m.group(2)))
if not runs.get("block1") or not runs.get("block0"):
    print("attn_table: no block1 / block0 runs in", d)
    sys.exit(0)


def best(v, c):
    r = runs[v].get(c)
    if not r:
        return None
    return min(x[0] for x in r), min(x[1] for x in r), r[0][2]


def short(k):
    return k.replace(".comp", "").replace("attention", "att")


print(f"{'case H,L,S,E,causal,dtype':26} {'block us':>9} {'other us':>9} {'ratio':>6} {'wall r':>6}  "
      f"{'branch default':22} {'main default':22}")
slower, faster, n = [], [], 0
for c in runs["block1"]:
    b1, b0 = best("block1", c), best("block0", c)
    if not b1 or not b0 or b0[0] <= 0:
        continue
    n += 1
    ratio, wr = b1[0] / b0[0], b1[1] / b0[1] if b0[1] > 0 else 0
    cols = []
    for v in ("branch", "main"):
        x = best(v, c)
        cols.append(f"{short(x[2])} {x[0]:.1f}" if x else "-")
    print(f"{c:26} {b1[0]:9.1f} {b0[0]:9.1f} {ratio:6.2f} {wr:6.2f}  {cols[0]:22} {cols[1]:22}  "
          f"[{short(b1[2])} / {short(b0[2])}]")
    for v, lst in (("branch", slower), ("main", slower)):
        x = best(v, c)
        if x and "attention_block" in x[2] and ratio > 1.0:
            lst.append(f"{v} {c} {ratio:.2f}")
    x = best("branch", c)
    if x and "attention_block" not in x[2] and ratio < 0.9:
        faster.append(f"{c} {ratio:.2f}")
print(f"\n{n} cases; a default takes the block kernel where it is slower (ratio > 1): {len(slower)}")
for s in slower:
    print("  ", s)
print(f"the branch's default does not take it where it is faster by > 10 % (ratio < 0.9): {len(faster)}")
for s in faster:
    print("  ", s)
