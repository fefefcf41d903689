#!/usr/bin/env bash
# The lead's final OCR call of 2026-11-27 23:20 UTC (bench/RESULTS.md): run from the repo root on
# the GPU machine with gpu-pack/ = `scripts/pack_gpu.sh --ocr` plus tests/test_quant, carry
# [".gl", "gpu-pack"]: ocrtest and replay phases, test_ocr_pipeline, the page x3, and the
# test_quant GridPastOneDispatch failure (GLES tests, TEST_JOBS=3) by its seed and under concurrency.
P=$PWD/gpu-pack
timeout 300 bash gpu-pack/run.sh info ocrtest replay 2>&1 | grep -vE "^\[ +(RUN|OK) " | tail -45
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json LD_LIBRARY_PATH=$P/lib GLTENSOR_CACHE_DIR=/tmp/glt-final
echo "== test_ocr_pipeline"; GLTENSOR_MODEL_CACHE=$P timeout 120 $P/bin/test_ocr_pipeline --gtest_brief=1 2>&1 | tail -4
for r in 1 2 3; do echo "== page $r"; timeout 60 $P/bin/gltensor_ocr_bench --models $P/models/ocr --ort none --only ocr960 --runs 20 --images gpu --rec-batch 0 --rec-call-cost 6000 --det-limit 640 --replay 1 --cls 0 --out /tmp/ob 2>&1 | grep -E "^\| OCR|^medians|lines|rror" | cut -c1-260; done
echo "== quant seed"; GLTENSOR_TEST_SEED=14248877845016218358 timeout 60 $P/bin/test_quant --gtest_filter='Quant.GridPastOneDispatch' 2>&1 | grep -E "Failure|Actual|PASSED|FAILED" | head
echo "== quant x3 concurrent, repeat 4"; for i in 1 2 3; do (timeout 120 $P/bin/test_quant --gtest_repeat=4 --gtest_brief=1 > /tmp/q$i.txt 2>&1; echo "rc=$?" >> /tmp/q$i.txt) & done; wait
for i in 1 2 3; do grep -E "Actual|seed=|rc=|FAILED  \]" /tmp/q$i.txt | sort | uniq -c | head -8; done
