#!/usr/bin/env bash
# The lead's final OCR/model call of 2026-11-28 07:29 UTC (bench/RESULTS.md): run from the repo root on the GPU
# machine with gpu-pack/ = `scripts/pack_gpu.sh --ocr`, carry [".gl", "gpu-pack"]: ocrtest and replay
# phases, test_ocr_pipeline, the 960 page in 5 processes, the QDQ nets (int8 / f32), and the
# three-Gemm model end to end, 3 rounds. EXTRA_TESTS: more test programs for its GLES list (2026-11-28 10:33:
# EXTRA_TESTS="test_model_se test_ocr_models").
P=$PWD/gpu-pack
timeout 240 bash gpu-pack/run.sh info ocrtest replay 2>&1 | grep -vE "^\[ +(RUN|OK) " | tail -40
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json LD_LIBRARY_PATH=$P/lib GLTENSOR_CACHE_DIR=/tmp/glt-final
echo "== test_ocr_pipeline"; GLTENSOR_MODEL_CACHE=$P timeout 120 $P/bin/test_ocr_pipeline --gtest_brief=1 2>&1 | tail -4
for r in 1 2 3; do echo "== page $r"; timeout 60 $P/bin/gltensor_ocr_bench --models $P/models/ocr --ort none --only ocr960 --runs 20 --images gpu --rec-batch 0 --rec-call-cost 6000 --det-limit 640 --replay 1 --cls 0 --out /tmp/ob 2>&1 | grep -E "^\| OCR|^medians|lines|rror" | cut -c1-260; done
echo "== QDQ nets"; timeout 60 $P/bin/gltensor_model_bench --qdq --runs 20 --gpu-time 2>&1 | grep -v "^|---"
echo "== three-Gemm e2e"; for r in 1 2 3; do timeout 60 $P/bin/gltensor_model_bench --runs 500 --save-model /tmp/three_gemm.onnx --mlp-variants 4x4 4 2>&1 | grep -E "^issue 21 goal|^e2e phases"; done
echo "== test_model_host_io / test_fused_mlp / test_model_replay / test_model_run (GLES)"; for t in test_model_host_io test_fused_mlp test_model_replay test_model_run test_recording ${EXTRA_TESTS:-}; do GLTENSOR_MODEL_CACHE=$P timeout 60 $P/bin/$t --gtest_brief=1 2>&1 | tail -3; done
echo "== the same, desktop GL"; for t in test_model_host_io test_fused_mlp test_model_replay; do GLTENSOR_API=gl GLTENSOR_MODEL_CACHE=$P timeout 60 $P/bin/$t --gtest_brief=1 2>&1 | tail -3; done
