#!/usr/bin/env bash
# The lead's final OCR call of 2026-11-28 ~19:20 UTC (bench/RESULTS.md): lead16's final-ocr.sh without what the
# tests call (gpu-pack/run.sh tests, testsgl) and the models call (torchcmp, QDQ) run already, to save device time.
# Run from the repo root on the GPU machine with gpu-pack/ = `scripts/pack_gpu.sh --ocr` (unused programs removed),
# carry [".gl", "gpu-pack"]: the OCR model tests (test_model_se, test_ocr_models), test_ocr_pipeline, the 960 x 960
# page in 3 processes, the three-Gemm model end to end, 3 rounds.
P=$PWD/gpu-pack
timeout 200 bash gpu-pack/run.sh info ocrtest 2>&1 | grep -vE "^\[ +(RUN|OK) " | tail -30
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json LD_LIBRARY_PATH=$P/lib GLTENSOR_CACHE_DIR=/tmp/glt-final
echo "== test_ocr_pipeline"; GLTENSOR_MODEL_CACHE=$P timeout 120 $P/bin/test_ocr_pipeline --gtest_brief=1 2>&1 | tail -4
for r in 1 2 3; do echo "== page $r"; timeout 60 $P/bin/gltensor_ocr_bench --models $P/models/ocr --ort none --only ocr960 --runs 20 --images gpu --rec-batch 0 --rec-call-cost 6000 --det-limit 640 --replay 1 --cls 0 --out /tmp/ob 2>&1 | grep -E "^\| OCR|^medians|lines|rror" | cut -c1-260; done
echo "== three-Gemm e2e"; for r in 1 2 3; do timeout 60 $P/bin/gltensor_model_bench --runs 500 --save-model /tmp/three_gemm.onnx --mlp-variants 4x4 4 2>&1 | grep -E "^issue 21 goal|^e2e phases"; done
