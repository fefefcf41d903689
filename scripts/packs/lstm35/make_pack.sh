#!/usr/bin/env bash
# Makes lstm35's GPU pack: P=/work/main/gpu-multi/lstm35 bash scripts/packs/lstm35/make_pack.sh
# bin/ (this worktree's gltensor-run, gltensor_model_bench, test_rnn, stripped), lib/ (its libgltensor.so.0),
# libs.tar.xz (libmain/: main's, MAIN_LIB, default /work/main/build's; libprev/: PREV_LIB's, optional), py/ (torchcmp's scripts), torchcmp.sh, run.sh, COMMIT.
set -eu
WT=$(git rev-parse --show-toplevel); P=${P:-/work/main/gpu-multi/lstm35}; SHARED=${SHARED:-/work/shared/gpu}
MAIN_LIB=${MAIN_LIB:-/work/main/build/libgltensor.so.0}
# (a result.txt of the last window is kept as result-prev.txt, outside the pack's files)
[ -e "$P/result.txt" ] && cp "$P/result.txt" "/tmp/lstm35-result-prev-$(date +%H%M%S).txt"
rm -rf "$P"; mkdir -p "$P/bin" "$P/lib" "$P/py"; T=$(mktemp -d); mkdir -p "$T/libmain"
cp "$WT/build/tools/gltensor-run" "$WT/build/bench/gltensor_model_bench" "$WT/build/tests/test_rnn" "$P/bin/"
cp -L "$WT/build/libgltensor.so.0" "$P/lib/"
cp -L "$MAIN_LIB" "$T/libmain/libgltensor.so.0"
# PREV_LIB (optional): an earlier build's libgltensor.so.0, run against this one
if [ -n "${PREV_LIB:-}" ]; then mkdir -p "$T/libprev" && cp -L "$PREV_LIB" "$T/libprev/libgltensor.so.0"; fi
# PROBE_LIB (optional): a probe build's libgltensor.so.0 (window 3: hidden 64 in 4 parts a row)
if [ -n "${PROBE_LIB:-}" ]; then mkdir -p "$T/libprobe" && cp -L "$PROBE_LIB" "$T/libprobe/libgltensor.so.0"; fi
strip "$P"/bin/* "$P"/lib/* "$T"/lib*/*
# main's and PREV_LIB's libraries xz-compressed (run.sh unpacks them into /tmp): the carry is shared
tar -C "$T" -cf - libmain ${PREV_LIB:+libprev} ${PROBE_LIB:+libprobe} | xz -T1 -6 > "$P/libs.tar.xz"; rm -rf "$T"
cp "$WT/scripts/packs/torchcmp/torchcmp.py" "$WT/scripts/packs/torchcmp/onnx_torch_ext.py" "$SHARED/onnx_torch.py" "$P/py/"
cp "$WT/scripts/packs/torchcmp/run.sh" "$P/torchcmp.sh"
if [ "${WINDOW:-}" = 4 ]; then cp "$WT/scripts/packs/lstm35/run4.sh" "$P/run.sh"; else cp "$WT/scripts/packs/lstm35/run.sh" "$P/run.sh"; fi
git -C "$WT" log -1 --format='%h %s' | cut -c1-100 > "$P/COMMIT"
[ -z "$(git -C "$WT" status --porcelain --untracked-files=no)" ] || echo "+ uncommitted changes" >> "$P/COMMIT"
du -sh "$P"
