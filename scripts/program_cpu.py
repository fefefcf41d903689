#!/usr/bin/env python3
"""The CPU each new program costs a run: which kernels a software rasterizer spends its time compiling.

  GLTENSOR_CACHE_DIR=$(mktemp -d) MESA_SHADER_CACHE_DISABLE=true \
    scripts/program_cpu.py out.tsv -- build/tests/test_ocr_models --gtest_filter=OcrModels.DetectorMatchesOnnxRuntime

Runs the command with GLTENSOR_DUMP_SOURCE (default `.comp`: every new program prints "==== <kernel
file>" and its source on stderr, as the program is created) and reads the process's CPU time (all its
threads, /proc/PID/stat) at each one. out.tsv, a line per program in creation order: kernel file,
CPU s at its creation, CPU s until the next new program (the end of the run for the last), its
`#define`s (the variant's; scripts/program_defines.py tells which split programs). On llvmpipe a
program is compiled by LLVM at its first dispatch, right after its creation, so where a run is
compile-bound the third column is that program's compile; elsewhere it also holds the dispatches
that ran until the next new program. The same run on two drivers lists the same programs in the
same order (`paste` the two files to compare them program by program). Exit status: the command's.
"""
import os
import subprocess
import sys

if len(sys.argv) < 4 or sys.argv[2] != "--":
    sys.exit(__doc__)
out, cmd = sys.argv[1], sys.argv[3:]
env = dict(os.environ, GLTENSOR_DUMP_SOURCE=os.environ.get("GLTENSOR_DUMP_SOURCE", ".comp"))
proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, env=env)
ticks = os.sysconf("SC_CLK_TCK")


def cpu():
    try:
        fields = open(f"/proc/{proc.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime, all threads
    except (OSError, IndexError, ValueError):
        return None


programs = []  # [kernel, CPU s at creation, defines]
for raw in proc.stderr:
    line = raw.decode(errors="replace")
    if line.startswith("==== "):
        programs.append([line[5:].strip(), cpu(), []])
    elif programs and line.startswith("#define "):
        programs[-1][2].append(line[8:].strip())
    elif not programs or line.startswith("gltensor"):
        sys.stderr.write(line)  # the command's own stderr before the first program, gltensor's log lines
end = cpu()  # stderr closed: the process is exiting (read before it is reaped)
rc = proc.wait()
with open(out, "w") as f:
    for i, (kernel, at, defines) in enumerate(programs):
        nxt = programs[i + 1][1] if i + 1 < len(programs) else end
        spent = f"{nxt - at:.2f}" if nxt is not None and at is not None else ""
        f.write(f"{kernel}\t{at}\t{spent}\t{' '.join(defines)}\n")
sys.exit(rc)
