#!/usr/bin/env bash
# Makes attn38's GPU pack: P=/work/main/gpu-multi/attn38 bash scripts/packs/attn38/make_pack.sh
# builds.tar.xz: bin/ + lib/ (this worktree's release gltensor-run, test_nn, test_plans, test_model_attention, test_attention, test_kv_cache and
# libgltensor.so.0, stripped) and main/bin + main/lib (/work/main/build's gltensor-run and libgltensor.so.0),
# unpacked by run.sh into /tmp; py/ (torchcmp.py, onnx_torch_ext.py, torch_kernels.py, shared/gpu's onnx_torch.py),
# run.sh, knobs.sh (the window's variants), COMMIT and main/COMMIT. Under 20 MiB.
set -eu
WT=$(git rev-parse --show-toplevel); P=${P:-/work/main/gpu-multi/attn38}; MAIN=${MAIN:-/work/main}
SHARED=${SHARED:-/work/shared/gpu}
T=$(mktemp -d); [ -e "$P/result.txt" ] && cp "$P/result.txt" "$WT/scripts/packs/attn38/result-last.txt"; rm -rf "$P"; mkdir -p "$P/py" "$P/main" "$T/bin" "$T/lib" "$T/main/bin" "$T/main/lib"
cp "$WT/build/tools/gltensor-run" "$T/bin/"
for t in test_nn test_plans test_model_attention test_attention test_kv_cache; do cp "$WT/build/tests/$t" "$T/bin/"; done
cp -L "$WT/build/libgltensor.so.0" "$T/lib/"
cp "$MAIN/build/tools/gltensor-run" "$T/main/bin/"; cp -L "$MAIN/build/libgltensor.so.0" "$T/main/lib/"
strip "$T"/bin/* "$T"/lib/* "$T"/main/bin/* "$T"/main/lib/*
tar -C "$T" -cf - bin lib main | xz -T1 -6 > "$P/builds.tar.xz"; rm -rf "$T"
cp "$WT/scripts/packs/torchcmp/torchcmp.py" "$WT/scripts/packs/torchcmp/onnx_torch_ext.py" "$WT/scripts/packs/attn38/torch_kernels.py" "$SHARED/onnx_torch.py" "$P/py/"
cp "$WT/scripts/packs/attn38/knobs.sh" "$P/knobs.sh"
cp "$WT/scripts/packs/attn38/run.sh" "$P/run.sh"
git -C "$WT" log -1 --format='%h %s' | cut -c1-100 > "$P/COMMIT"
[ -z "$(git -C "$WT" status --porcelain --untracked-files=no)" ] || echo "+ uncommitted changes" >> "$P/COMMIT"
git -C "$MAIN" log -1 --format='%h %s' | cut -c1-100 > "$P/main/COMMIT"
du -sh "$P"
# GLSL variants for GLTENSOR_GLSL_DIR (the same interface as the embedded kernels): gv/<name>/<kernel>.comp from
# scripts/packs/attn38/gv and gen/attn_variants.py (attention.comp's pv4, merge, early, all), and gv/unroll (attention.comp and attention_lanes.comp with NVIDIA's unroll pragma),
# gv/<name>u (each variant with it)
cp -r "$WT/scripts/packs/attn38/gv" "$P/gv"
python3 "$WT/scripts/packs/attn38/gen/attn_variants.py" "$WT/glsl/nn/attention.comp" "$P/gv"  # pv4, merge, early, all
unroll() { sed '/^layout(local_size_x/i #pragma optionNV(unroll all)' "$1" > "$2"; }
mkdir -p "$P/gv/unroll"
for f in attention.comp attention_lanes.comp; do unroll "$WT/glsl/nn/$f" "$P/gv/unroll/$f"; done
for d in "$WT"/scripts/packs/attn38/gv/*/ "$P"/gv/all/; do
  n=$(basename "$d"); mkdir -p "$P/gv/${n}u"
  for f in "$d"*.comp; do unroll "$f" "$P/gv/${n}u/$(basename "$f")"; done
done
du -sh "$P"
