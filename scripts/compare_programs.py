#!/usr/bin/env python3
"""Are two builds' kernels the same code? Compares the programs two runs compiled.

Run the same test (same GLTENSOR_TEST_SEED) with each build, the sources printed by
GLTENSOR_DUMP_SOURCE=.comp on stderr (every new program: "==== <kernel file>", then its source):

  GLTENSOR_TEST_SEED=1 GLTENSOR_DUMP_SOURCE=.comp old/tests/test_nn >/dev/null 2>old.txt
  GLTENSOR_TEST_SEED=1 GLTENSOR_DUMP_SOURCE=.comp new/tests/test_nn >/dev/null 2>new.txt
  scripts/compare_programs.py old.txt new.txt

Each source is preprocessed by glslangValidator -E (glslang-tools; common.glsl's F_NAN / F_INF
constants as macros, as in tests/ops/test_kernel_variants.cpp), whitespace collapsed, and its
top-level declarations sorted (a function moved between files or includes is the same program).
Kernel file names do not count (a kernel split into files compares with its old file). Prints
how many distinct programs each run compiled and those only one of them did; exits 1 if any.
"""
import subprocess
import sys
import tempfile


def programs(path):
    text = open(path, errors="replace").read()
    chunks = text.split("\n==== ")
    if chunks[0].startswith("==== "):
        chunks[0] = chunks[0][5:]
    else:
        chunks = chunks[1:]
    return [(c.partition("\n")[0].strip(), c.partition("\n")[2]) for c in chunks]


def glslang_source(src):
    out = []
    for line in src.split("\n"):
        if line.startswith("const float F_") and line.endswith(";"):
            eq = line.find(" = ")
            line = "#define " + line[12:eq] + " " + line[eq + 3:-1]
        out.append(line)
    return "\n".join(out)


def declarations(code):
    """Top-level declarations of preprocessed GLSL (ended by ';' or a closing '}' at depth 0)."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(code):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if depth == 0 and ch in ";}":
            items.append(" ".join(code[start:i + 1].split()))
            start = i + 1
    return tuple(sorted(i for i in items if i))


def canonical(src, tmp):
    with open(tmp, "w") as f:
        f.write(glslang_source(src))
    r = subprocess.run(["glslangValidator", "-E", tmp], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"glslangValidator -E failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    return declarations(r.stdout)


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    with tempfile.TemporaryDirectory() as d:
        tmp = d + "/program.comp"
        runs = [{canonical(src, tmp): name for name, src in programs(p)} for p in sys.argv[1:]]
    old, new = runs
    only_old = sorted(old[k] for k in old.keys() - new.keys())
    only_new = sorted(new[k] for k in new.keys() - old.keys())
    print(f"old: {len(old)} programs, new: {len(new)}, the same: {len(old.keys() & new.keys())}")
    if only_old or only_new:
        print(f"only old: {only_old}\nonly new: {only_new}")
        sys.exit(1)


if __name__ == "__main__":
    main()
