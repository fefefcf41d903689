#!/usr/bin/env bash
# gltensor against PyTorch's CUDA graph on every model the project tests (issue 21), in one GPU call:
#   bash gpu-multi/torchcmp/run.sh        (the lead's window: $H the pack, made by make_pack.sh)
# Locally (llvmpipe, PyTorch on the CPU) for a quick check of the script:
#   H=PACK_DIR TC_ONLY='attention|layernorm' TC_REPS=3 bash scripts/packs/torchcmp/run.sh
# 1. the models: gltensor_model_bench --save-models (the QDQ nets f32 and int8, the LSTMs, the three-Gemm
#    model), torchcmp.py prepare (the log-mel front end, attention, LayerNorm and Softmax in the tests' forms,
#    seeded inputs), PP-OCRv4 det / rec and the direction classifier from the pack;
# 2. gltensor-run --bench N --read-back on each, plain and --replay (outputs written by the first run);
# 3. torchcmp.py torch: PyTorch eager and its replayed CUDA graph on the same inputs, outputs compared, the table;
# 4. gltensor-run --profile (GPU time per node type and kernel) for each model slower than the CUDA graph.
set -u
# Warm-ups of at least TC_WARMUP_MS ms on both sides (gltensor-run --warmup-ms, torchcmp.py's warm-ups; 0: counts only,
# the method before host38, 2026-11-28 18:45: a fresh gltensor-run's first 40-60 runs on an idle GPU were slow)
export TC_WARMUP_MS=${TC_WARMUP_MS:-300}
W=${TC_W:-/tmp/torchcmp}; PY=${TC_PY:-python3}; REPS=${TC_REPS:-}; ONLY=${TC_ONLY:-.}
rm -rf "$W"; mkdir -p "$W/log" "$W/out" "$W/ocr"
step() { echo; echo "=== [$SECONDS s] $*"; }
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
echo "torchcmp commit: $(cat "$H/COMMIT" 2> /dev/null)"
step "models"
[ -e "$H/ocr.tar.xz" ] && tar -C "$W/ocr" -xJf "$H/ocr.tar.xz"
OCR=$W/ocr; [ -e "$OCR/ch_PP-OCRv4_det_infer.onnx" ] || OCR=${TC_OCR_DIR:-/work/main/.cache/models/ocr}
timeout 30 "$H/bin/gltensor_model_bench" --save-models "$W/models" || echo "save-models failed"
timeout 60 "$PY" "$H/py/torchcmp.py" prepare "$W" --ocr "$OCR" || echo "prepare failed"
echo "$(wc -l < "$W/cases.txt") cases, the filter TC_ONLY: $ONLY"
step "gltensor-run on each model, plain and replayed (--read-back)"
while IFS='|' read -r name model reps args; do
  echo "$name" | grep -qE "$ONLY" || continue
  [ "$SECONDS" -gt "${TC_GL_UNTIL:-100}" ] && echo "$name: no time left for gltensor-run" && continue
  n=${REPS:-$reps}
  wu="--warmup-ms $TC_WARMUP_MS"
  # shellcheck disable=SC2086  # $args: --input NAME=FILE arguments
  timeout 30 "$H/bin/gltensor-run" "$model" $args --bench "$n" $wu --read-back --output-dir "$W/out/$name" \
    > "$W/log/$name-plain.txt" 2>&1 || echo "$name plain: rc $?"
  # shellcheck disable=SC2086
  timeout 30 "$H/bin/gltensor-run" "$model" $args --bench "$n" $wu --read-back --replay > "$W/log/$name-replay.txt" 2>&1 ||
    echo "$name replay: rc $?"
  echo "$name: plain $(grep -E '^bench|rror' "$W/log/$name-plain.txt" | cut -c1-170)"
  echo "$name: replay $(grep -E '^bench|rror' "$W/log/$name-replay.txt" | cut -c1-170)"
done < "$W/cases.txt"
step "PyTorch: eager and CUDA graph, outputs against gltensor's"
T=$((205 - SECONDS)); [ $T -gt 120 ] && T=120
timeout "$T" "$PY" "$H/py/torchcmp.py" torch "$W" --only "$ONLY" ${REPS:+--reps $REPS} || echo "torch side: rc $?"
step "profiles of the models slower than the CUDA graph (gltensor-run --profile --bench 50, plain)"
touch "$W/slower.txt"
while read -r name <&3; do
  [ "$SECONDS" -gt "${TC_PROFILE_UNTIL:-200}" ] && echo "no time left for $name's profile" && continue
  IFS='|' read -r _ model _ args < <(grep "^$name|" "$W/cases.txt")
  echo "--- $name"
  # shellcheck disable=SC2086
  timeout 15 "$H/bin/gltensor-run" "$model" $args --bench "${REPS:-50}" --profile 2>&1 |
    grep -vE "^output |^load|^plan" | head -"${TC_PROFILE_LINES:-45}"
done 3< "$W/slower.txt"
step "done"
