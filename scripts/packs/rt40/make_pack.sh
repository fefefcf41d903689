#!/usr/bin/env bash
# Makes rt40's GPU pack: P=/work/main/gpu-multi/rt40 bash scripts/packs/rt40/make_pack.sh
# builds.tar.xz: bin/ (this worktree's release test_profiler, test_pool, test_interop_state, test_nn, test_plans,
# gltensor_attention_bench, gltensor_latency_bench, gltensor-run, stripped), lib/ (its libgltensor.so.0) and main/lib,
# main/bin (/work/main/build's libgltensor.so.0 and gltensor-run); models/ (PP-OCR's cls model, 0.6 MB, for
# gltensor-run --profile); run.sh, attn_table.py, COMMIT and main/COMMIT. Under 20 MiB.
set -eu
WT=$(git rev-parse --show-toplevel); P=${P:-/work/main/gpu-multi/rt40}; MAIN=${MAIN:-/work/main}
T=$(mktemp -d); rm -rf "$P"; mkdir -p "$P/main" "$P/models" "$T/bin" "$T/lib" "$T/main/bin" "$T/main/lib"
for t in test_profiler test_pool test_interop_state test_nn test_plans; do cp "$WT/build/tests/$t" "$T/bin/"; done
cp "$WT/build/bench/gltensor_attention_bench" "$WT/build/bench/gltensor_latency_bench" "$WT/build/tools/gltensor-run" \
  "$T/bin/"
cp -L "$WT/build/libgltensor.so.0" "$T/lib/"
cp "$MAIN/build/tools/gltensor-run" "$T/main/bin/"; cp -L "$MAIN/build/libgltensor.so.0" "$T/main/lib/"
strip "$T"/bin/* "$T"/lib/* "$T"/main/bin/* "$T"/main/lib/*
tar -C "$T" -cf - bin lib main | xz -T1 -6 > "$P/builds.tar.xz"; rm -rf "$T"
cp "${GLTENSOR_MODEL_CACHE:-$MAIN/.cache}/models/ocr/ch_ppocr_mobile_v2.0_cls_infer.onnx" "$P/models/cls.onnx"
cp "$WT/scripts/packs/rt40/run.sh" "$WT/scripts/packs/rt40/attn_table.py" "$P/"
git -C "$WT" log -1 --format='%h %s' | cut -c1-100 > "$P/COMMIT"
[ -z "$(git -C "$WT" status --porcelain --untracked-files=no)" ] || echo "+ uncommitted changes" >> "$P/COMMIT"
git -C "$MAIN" log -1 --format='%h %s' | cut -c1-100 > "$P/main/COMMIT"
du -sh "$P"
