#!/usr/bin/env bash
# suite39b's GPU pack (issue 21): the test program whose test the branch changed, on OpenGL ES and desktop
# GL. No kernel changed (the branch cuts the cold suite's CPU on llvmpipe): test_ocr_models, whose
# BatchedRecognitionMatchesLineByLine recognizes the shared host run's boxes in batches of 2
# (OcrPipeline::recognize_lines) instead of running the detector on the page again; its ONNX Runtime
# comparisons skip without node. The lead runs it as `bash gpu-multi/suite39b/run.sh` ($H the pack); at most
# about 130 s (timeouts a run). F=FILTER: a gtest filter (a short local try).
set -u
W=/tmp/suite39bw; rm -rf "$W"; mkdir -p "$W/bin" "$W/lib" "$W/cache"
step() { echo; echo "=== [$SECONDS s] $*"; }
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "branch: $(cat "$H/COMMIT")"
xz -dc "$H/builds.tar.xz" | tar -C "$W" -xf -
chmod +x "$W"/bin/*
# The sample's font where demos/ocr/image.hpp looks for it (as scripts/gpu_run.sh does).
FONT=/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf
[ -f "$FONT" ] || { mkdir -p "$(dirname "$FONT")" && xz -dc "$H/DejaVuSans.ttf.xz" > "$FONT" && echo "font: $FONT from the pack"; }
mkdir -p "$W/cache/models/ocr"
for f in "$H"/models/models/ocr/*.xz; do xz -dc "$f" > "$W/cache/models/ocr/$(basename "$f" .xz)"; done
export LD_LIBRARY_PATH=$W/lib:${LD_LIBRARY_PATH:-} GLTENSOR_MODEL_CACHE=$W/cache
echo "libraries not found: $(ldd "$W/bin/test_ocr_models" | grep -c 'not found')"
ldd "$W/bin/test_ocr_models" | grep 'not found'
summary() { grep -E -A3 "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]|Failure|seed|tests ran|OK \]" "$1" | head -40; }
for api in gles gl; do
  for t in test_ocr_models; do
    step "$t, GLTENSOR_API=$api"
    (cd "$W" && GLTENSOR_API=$api timeout 60 "$W/bin/$t" --gtest_filter="${F:-*}" > "$W/$t-$api.txt" 2>&1)
    echo "rc $?"
    summary "$W/$t-$api.txt"
  done
done
step "done"
