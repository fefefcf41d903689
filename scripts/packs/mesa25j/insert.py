#!/usr/bin/env python3
"""mesa25j's section (the prose below with the run's figures, table.py's tables) put at the top of bench/RESULTS.md,
under its opening paragraph. RUN: the run folder (default /work/m25j)."""
import os, statistics, subprocess
RUN = os.environ.get('RUN', '/work/m25j')
HERE = os.path.dirname(os.path.abspath(__file__))
tab = subprocess.run(['python3', os.path.join(HERE, 'table.py'), '--branches'], capture_output=True, text=True, check=True).stdout
main_tab, br_tab = tab.split('\n\n', 1)
lines = main_tab.rstrip('\n').split('\n')
summary = lines[-1]; main_tab = '\n'.join(lines[:-1])
vals = dict(x.split(' ', 1) for x in summary.split(', '))
rows = [l.rstrip('\n').split('\t') for l in open(os.path.join(RUN, 'results.tsv')) if l.strip()]
prev = {c[0]: c for c in (l.rstrip('\n').split('\t') for l in open(os.path.join(HERE, 'prev25.tsv')))}
ci = {c[0]: c for c in (l.rstrip('\n').split('\t') for l in open(os.path.join(HERE, 'ci22.tsv')))}
aff = [l.rstrip('\n').split('\t') for l in open(os.path.join(HERE, 'affected.txt'))]
done = {r[0] for r in rows}
left = [a for a in aff if a[0] not in done]
fails = [r[0] for r in rows if r[1] not in ('pass', 'skipped')]
skipped = [r[0] for r in rows if r[1] == 'skipped']
qout = open(os.path.join(RUN, 'q.out')).read().split('\n')
first = qout[0].split()[0][:5]
last = max([r[-1] for r in rows] + [l.rstrip('\n').split('\t')[-1] for f in os.listdir(RUN) if f.startswith('results-')
                                    for l in open(os.path.join(RUN, f)) if l.strip()])[:5]
lo, hi = vals['load'].split('-')
r_ci = [float(r[2]) / float(ci[r[0]][2]) for r in rows if r[0] in ci and float(ci[r[0]][2]) >= 2 and float(r[2]) >= 2]
r_prev = [float(r[2]) / float(prev[r[0]][2]) for r in rows if r[0] in prev and float(prev[r[0]][2]) > 5]
tiers = {t: sum(1 for a in aff if a[1] == t) for t in '123'}
tiers_done = {t: sum(1 for a in aff if a[1] == t and a[0] in done) for t in '123'}
notrun = ', '.join(f'{a[0]} ({a[2]}; {float(a[3]):.1f}, {prev[a[0]][4]})' for a in left)
text = f"""## 2026-11-28, {first}-{last} UTC — llvmpipe of Mesa 25.0.7 (LLVM 15.0.6, 256 bits, OpenGL ES 3.2) against Mesa 22.3.6, 2 cores shared with 6 other helpers (load average {lo}-{hi}): main 1858833's entries that the changes since ee5c5f0 reach: {vals['pass']} of {vals['rows']} run pass, {len(skipped)} skipped as on Mesa 22, {'no failure' if not fails else 'FAILURES: ' + ', '.join(fails)}; the session's branches' changed entries pass except io37's two, which fail on Mesa 22 too (issue 21, branch mesa25j)

**Set-up** (scripts/packs/mesa25j/README.md, `setup.sh`): the machine was fresh (/work/m25c gone), so
bookworm-backports' Mesa 25.0.7-2~bpo12+1 (libegl-mesa0, libglx-mesa0, libgl1-mesa-dri, libgbm1, mesa-libgallium) and
libdrm 2.4.123-1~bpo12+1 (libdrm2, -common, -amdgpu1, -intel1) were fetched again with a private source list and
unpacked with `dpkg -x` into /work/m25j/root, nothing installed (the system's Mesa 22.3.6 stays CI's and the other
helpers'), with mesa25c's env.sh (`/work/m25j/env.sh`). Checked: `gltensor-info` under `LD_DEBUG=libs` reports
"OpenGL ES 3.2 Mesa 25.0.7-2~bpo12+1", self-check PASS, and the loader initialised
/work/m25j/root/.../libgallium-25.0.7-2~bpo12+1.so and its libEGL_mesa.so.0, none of /usr/lib's Mesa; a running
entry's /proc/PID/maps (test_model_ops_check_loops) showed the same two; the program cache's loop-limit file names that
renderer with limit 0 (no loop limit, as before).

**Command:** `M25=/work/m25j WT=/work/wt-mesa25j bash scripts/packs/mesa25f/q.sh` over /work/m25j/queue.txt
(scripts/packs/mesa25j/queue.txt as run), i.e. per entry `source /work/m25j/env.sh; GLTENSOR_MODEL_CACHE=/work/main/.cache
GLTENSOR_REQUIRE_MODELS=1 MESA_SHADER_CACHE_DISABLE=true NICE=19 CAP=1500 scripts/ctest_entries_cpu.py build
/work/m25j/run /work/m25j/pc-entries /work/m25j/results.tsv -- ENTRY` (scripts/packs/mesa25j/entries.sh: ctest's own
command, filter, ENVIRONMENT (GALLIVM_PERF=nopt, GLTENSOR_MATMUL_REG_BLOCK=4x1 where main sets them) and pass / fail /
skip rules; nice 19; one process at a time; an empty program cache at the start, shared by the entries in turn; CPU =
user + system of the entry's processes), in this worktree's release build of main 1858833 (every target, ccache). The
Mesa 22 column: the lead's clean-clone CI of 58d1060 on this machine (14:21-14:47, quiet, cold caches, ctest -j2;
58d1060..1858833 changes only RESULTS.md): its result and ctest's wall seconds (`ci22.tsv`), so the ratio (Mesa 25
CPU-s / Mesa 22 wall-s) is rough. Table: `python3 scripts/packs/mesa25j/table.py`; this section: `insert.py`.

**Why these entries** (`affected.txt`, from `git diff --stat ee5c5f0..1858833` mapped to entries; `plan.py`): main
changed the read path (src/runtime/readback.cpp's one read_to_host with mapped pieces, host_copy.cpp's helper threads,
error_flags' kStall), which every entry that reads a tensor back reaches, so all 129 entries are affected. Tier 1
({tiers['1']} entries): new (test_conv_winograd, test_model_se_check_loops: never run on Mesa 25) or their test sources
changed, with the test headers grad_check.hpp (kinks left unchecked), conv_ref.hpp, qdq_ref.hpp (the integer tests at
the smallest register tile on software rasterizers) and attention_ref.hpp; tier 2 ({tiers['2']}): through a changed
kernel (matmul_reg's log / square epilogues and RESIDUAL, unary / activations, norm.comp's ROW_REGS, attention.comp's
head-dim quads and key split, attention_lanes.comp, conv_direct's RESIDUAL, rnn_seq_regs / rnn_step, fused_mlp,
squeeze_excite, conv_winograd), their host code or the model runtime (fuse_stft_power, fuse_se, fuse_residual, the
Winograd path, gltensor-run); tier 3 ({tiers['3']}): the read path only (interop, device, views, precision, graphics
frames, kernel_lab...). The queue began with the new entries and every entry under 20 CPU-s (by its last Mesa 25
figure), and was re-ordered while it ran (15:27, load 7-9: the whole looked too long; the load fell to 1-3 after
15:55 and every entry ran) so that the entries whose own kernels
changed (rnn, model attention, model ops, model, conv_direct, fused_mlp, attention head dims, nn, attention) came before
the remaining cheap ones, test_matmul's pair after those, then (15:59) the branches' entries (below) and the rest of
tier 1, with attn37's two (16:18) and suite17's new nopt entries (16:19) moved ahead of the rest of tier 2.

**Result: {vals['pass']} of the {vals['rows']} entries run pass on Mesa 25, {'no failure, crash, hang or timeout' if not fails else 'failures: ' + ', '.join(fails)}**
({', '.join(skipped)} skipped with code 77: a clone without ../shared, as in the CI's Mesa 22 pass; the tests'
own skips are the GPU-only and no-CUDA cases, as on Mesa 22), every one of them passing on Mesa 22 in the CI; {vals['CPU-s']}
CPU-s on Mesa 25 ({vals['wall'].split()[-1]} s of wall at nice 19). Reached: tier 1 {tiers_done['1']} of {tiers['1']}, tier 2
{tiers_done['2']} of {tiers['2']}, tier 3 {tiers_done['3']} of {tiers['3']}. {('Not reached by the 16:35 cut (why; last Mesa 25 pass CPU-s, where): ' + notrun + '; their last Mesa 25 pass stays that one.') if left else 'Every entry ran.'}
No failure, so no fix on gltensor's side was needed: nothing in src/, glsl/ or tests/ changed on this branch.

{main_tab}

**What the figures say:** Mesa 25 costs a median {statistics.median(r_ci):.1f}x the CI's Mesa 22 wall seconds
({len(r_ci)} entries past 2 s on both; {min(r_ci):.1f}-{max(r_ci):.1f}x; Mesa 22's under -j2, so rough; where the CI's
wall is far below Mesa 25's CPU, e.g. test_model_run 0.2 s or test_interop_glx_xvfb 0.3 s, the CI's run probably
skipped tests inside, not checked). Against
their last Mesa 25 figures (mesa25g/h/i, older code, other loads) the entries ran at a median {statistics.median(r_prev):.2f}x
({len(r_prev)} entries past 5 CPU-s; {min(r_prev):.2f}-{max(r_prev):.2f}x): cheaper where suite15 and suite16 cut
llvmpipe's register blocks (GLTENSOR_MATMUL_REG_BLOCK=4x1, the integer tests' smallest tile): test_fused_mlp 82.5 ->
11.3, test_model_ops 43.1 -> 10.6, test_autograd 21.0 -> 7.3, test_iconv_implicit 228.0 -> 108.0, test_quant_int
42.3 -> 9.5, test_matmul 335.2 -> 218.1; dearer where the tests grew: test_model_signal_ops 15.8 -> 29.9
(fuse_stft_power's tests), test_rnn_check_loops 33.5 -> 51.9 (the register and fused step kernels' tests). The new
entries: test_conv_winograd 20.0 CPU-s (Mesa 22 CI 4.4 s), test_model_se_check_loops 86.6 (12.1).

**The session's branches** (the brief's step 3; `branches.sh`): each tip exported with `git archive` into
/work/m25j/src-NAME (nothing of theirs committed here, their worktrees untouched), a release build there of only the
targets its changed entries run (ccache), and those entries in the same queue (`B:NAME ENTRY`, results-NAME.tsv, the
shared program cache); a branch that moved was rebuilt before its next entry (the commit column):

{br_tab.strip()}

io37's two failures are not Mesa 25's: the same binaries fail on the system's Mesa 22.3.6 (`test_pool
--gtest_filter=Pool.ReadBackOfAWriteTheQueueForgotGetsABarrier`: at n = 2097152 the GL order is "bcccccccc", the
test wants "bc", i.e. the piece-wise read's copies against the test's one-copy expectation; gltensor_run_profile:
its PASS_REGULAR_EXPRESSION wants "bench: 2 runs (outputs read back), mean", gltensor-run now prints "(outputs read
back, new)"): told to the lead at 16:08 and 16:23 for io37 to fix. Not run for the branches: mel37's, attn37's and
suite17's other reached entries (the model runtime's, attention's and conv_direct's wider users), lstm37's model
tests.
"""
p = os.path.join(HERE, '..', '..', '..', 'bench', 'RESULTS.md')
old = open(p).read().split('\n')
i = next(k for k, l in enumerate(old) if l.startswith('## '))
open(p, 'w').write('\n'.join(old[:i] + text.rstrip('\n').split('\n') + [''] + old[i:]))
