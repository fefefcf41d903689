#!/usr/bin/env bash
# upload38's GPU pack (issue 21: host uploads of 64 KB-16 MB against PyTorch's pageable `.cuda()`). The lead runs it as
# `ONLY=upload38 bash gpu-multi/run-all.sh` ($H the pack of make_pack.sh; builds.tar.xz unpacked into $W/b: bin + lib
# this branch's, main/bin + main/lib main's). In one call:
#   1. PyTorch's `.cuda()` of pageable (and pinned) float32 tensors, 64 KB-16 MB (torch_upload.py)
#   2. gltensor_io_bench's uploads (Tensor::from_bytes + synchronize) with main's library and with the branch's
#      under the variants of UPLOAD_VARIANTS (GLTENSOR_UPLOAD_PIECES / _COPY / _DIRECT); GLES, then two on desktop GL;
#      the table of ratios to PyTorch's pageable copy (compare_upload.py)
#   3. the tests of the pack (test_pool, test_model_host_io on GLES and desktop GL; TESTS of make_pack.sh, test_interop_*: once)
#   4. det 640 end to end (gltensor-run --upload --bench N --read-back, replayed and plain): main's library against
#      the branch's (the branch's gltensor-run with each: the public ABI is the same), ROUNDS rounds alternated
#   (the OCR page: not here, gltensor_ocr_bench needs OpenCV; its 2.7 MB upload is the 2700 KB row of 1 and 2)
set -u
W=/tmp/upload38w; PY=${PY:-python3}; RUNS=${RUNS:-200}; N=${N:-200}; ROUNDS=${ROUNDS:-2}
rm -rf "$W"; mkdir -p "$W/log" "$W/b" "$W/ocr"
tar -C "$W/b" -xJf "$H/builds.tar.xz"; tar -C "$W/ocr" -xJf "$H/ocr.tar.xz"
B=$W/b; LL=${LD_LIBRARY_PATH:-}; BR=$B/lib:$LL; MN=$B/main/lib:$LL
step() { echo; echo "=== [$SECONDS s] $*"; }
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
echo "branch: $(cat "$H/COMMIT")"; echo "main: $(cat "$H/main/COMMIT")"; nproc

step "1. PyTorch: .cuda() of pageable and pinned float32 tensors, $RUNS copies per size"
timeout 40 "$PY" "$H/torch_upload.py" --runs "$RUNS" --sizes "${SIZES:-64,256,1024,2048,2700,4096,4800,8192,16384}" > "$W/torch.txt" 2>&1 || echo "torch: rc $?"
cat "$W/torch.txt"

step "2. gltensor_io_bench uploads, $RUNS per size: main's library, the branch's variants (GLES)"
VARIANTS=${UPLOAD_VARIANTS:-"main default p8-threads-stream p8-threads"}
SIZES=${SIZES:-64,256,1024,2048,2700,4096,4800,8192,16384}
io() {  # name api -> $W/log/io-name-api.txt
  local name=$1 api=$2 lib=$BR envs=""
  case $name in
    main) lib=$MN ;;
    default) ;;
    direct) envs="GLTENSOR_UPLOAD_DIRECT=1" ;;
    p*-*) local p=${name%%-*}; envs="GLTENSOR_UPLOAD_PIECES=${p#p} GLTENSOR_UPLOAD_COPY=${name#*-}" ;;
  esac
  # shellcheck disable=SC2086
  env $envs GLTENSOR_API=$api LD_LIBRARY_PATH=$lib timeout 25 "$B/bin/gltensor_io_bench" --runs "$RUNS" --sizes "" --upload-sizes "$SIZES" \
    > "$W/log/io-$name-$api.txt" 2>&1 || echo "$name $api: rc $?"
  echo "--- $name ($api${envs:+, $envs})"; grep -E "^upload|wrong|rror" "$W/log/io-$name-$api.txt"
}
for v in $VARIANTS; do [ "$SECONDS" -lt 22 ] && io "$v" gles; done
step "2b. desktop GL 4.6: main and the default"
for v in main default; do [ "$SECONDS" -lt 26 ] && io "$v" gl; done
step "ratios to PyTorch's pageable copy (GLES; gl: desktop GL)"
args=(); for v in $VARIANTS; do args+=("$v=$W/log/io-$v-gles.txt"); done
"$PY" "$H/compare_upload.py" "$W/torch.txt" "${args[@]}" "main-gl=$W/log/io-main-gl.txt" "default-gl=$W/log/io-default-gl.txt"

step "3. tests: test_pool and test_model_host_io on GLES and desktop GL; the interop tests (their own GLES and GL contexts) once"
for t in test_pool test_model_host_io $(cd "$B/bin" && ls test_interop_* 2>/dev/null); do
  [ -x "$B/bin/$t" ] || continue; apis="gles gl"; case $t in test_interop_*) apis=gles ;; esac
  for api in $apis; do
    [ "$SECONDS" -gt 45 ] && continue
    echo "$t $api: $(cd "$W" && GLTENSOR_API=$api GLTENSOR_MODEL_CACHE=$W LD_LIBRARY_PATH=$BR timeout 12 "$B/bin/$t" --gtest_brief=1 2>&1 | grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure|seed" | head -6 | tr '\n' ' ')"
  done
done

step "4. det 640 end to end: gltensor-run --upload --bench $N --read-back (x uploaded each run), main's library / the branch's"
DET=$W/ocr/ch_PP-OCRv4_det_infer.onnx
for r in $(seq "$ROUNDS"); do
  for mode in replay plain; do
    rp=; [ $mode = replay ] && rp=--replay
    for b in main branch; do
      [ "$SECONDS" -gt 54 ] && continue
      lib=$BR; [ $b = main ] && lib=$MN
      echo "r$r $b $mode: $(LD_LIBRARY_PATH=$lib timeout 15 "$B/bin/gltensor-run" "$DET" --shape x=1x3x640x640 --upload --bench "$N" --read-back $rp 2>&1 | grep -E "^bench|rror" | cut -c1-200)"
    done
  done
done

# (5. the OCR of the 960 x 960 page: gltensor_ocr_bench needs OpenCV, which gpu-multi/common-lib has not (window 1:
# libopencv_imgproc.so.406 not found); the page's 2.7 MB upload (960 x 960 x 3 bytes, --images gpu) is the 2700 KB row.)
step "done"
