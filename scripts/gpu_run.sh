#!/usr/bin/env bash
# Runs on the GPU machine from the repo root (packed by scripts/pack_gpu.sh):
#   [TEST_JOBS=N] bash gpu-pack/run.sh PHASE...   with PHASE in info tests testsgl testsloops onnx int8 bench ab precision f16mm benchf lab labvariants mm mlp cnn profile torchtrain
#                                   interop, ocr ocrbench ocrtest graphics replay plan lstm modelort (after pack_gpu.sh --ocr), gpt decode (after pack_gpu.sh --gpt),
#                                   quant gptquant (after pack_gpu.sh --gpt: issue 24's quantization),
#                                   attn (after pack_gpu.sh --gpt: issue 23's training attention)
#                                   (diag: see git history)
# The OCR phases need python3 with numpy and onnxruntime (CPU) for the reference timings.
set -u
P=$(cd "$(dirname "$0")" && pwd)
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
export LD_LIBRARY_PATH=$P/lib:${LD_LIBRARY_PATH:-}
export GLTENSOR_CACHE_DIR=/tmp/gltensor-cache
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
for phase in "$@"; do
  case $phase in
    info) nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/info.txt"
          timeout 60 "$P/bin/gltensor-info" 2>&1 | tee -a "$OUT/info.txt" ;;
    tests|testsgl|testsloops) # testsgl: the whole suite on desktop OpenGL 4.6 core contexts (GLTENSOR_API=gl);
           # testsloops: with GLTENSOR_CHECK_LOOPS=1 (kernels check their declared loop lengths)
           log="$OUT/$phase.txt"; : > "$log"
           [ $phase = testsgl ] && export GLTENSOR_API=gl
           [ $phase = testsloops ] && export GLTENSOR_CHECK_LOOPS=1
           # TEST_JOBS programs at a time (default 1), each with its own program cache and log
           # folder, their summaries in the programs' order
           mkdir -p /tmp/tests-logs
           ls "$P"/bin/test_* | xargs -P "${TEST_JOBS:-1}" -I{} bash -c '
             t={}; n=$(basename "$t"); l=/tmp/tests-logs/$n.log
             GLTENSOR_CACHE_DIR=$GLTENSOR_CACHE_DIR/$n timeout 120 "$t" --gtest_brief=1 > "$l" 2>&1; rc=$?
             { echo "$n rc=$rc $(grep -E "^\[  (PASSED|FAILED) " "$l" | tr "\n" " ")"
               [ $rc -ne 0 ] && grep -E -A8 "Failure|error|exception" "$l" | head -60; } > "$l.sum"; cat "$l.sum" | head -1'
           for t in "$P"/bin/test_*; do cat "/tmp/tests-logs/$(basename "$t").log.sum" >> "$log"; done
           unset GLTENSOR_API GLTENSOR_CHECK_LOOPS ;;
    bench) timeout 420 "$P/bin/gltensor_bench" --benchmark_format=json --benchmark_out="$OUT/gltensor.json" \
             --benchmark_min_time=0.2 > "$OUT/bench.txt" 2>&1; echo "bench rc=$?"; tail -25 "$OUT/bench.txt"
           timeout 240 python3 "$P/torch_reference.py" --json "$OUT/torch.json" > "$OUT/torch.txt" 2>&1; cat "$OUT/torch.txt"
           python3 "$P/compare.py" "$OUT/gltensor.json" "$OUT/torch.json" --device "$(nvidia-smi --query-gpu=name --format=csv,noheader)" \
             --command "bench/run_gpu.sh" | tee "$OUT/table.md" ;;
    ab) # #12's no-slowdown check: the bench of the commit before the launch-layer refactor
        # (bin/gltensor_bench_old, packed with OLD_BENCH=...) against this one, interleaved rounds.
        f=${AB_FILTER:-'BM_matmul/f32/(256|1024|2048|4096)/|BM_matmul/f16/4096|BM_elementwise|BM_sum|BM_rows|BM_conv2d|BM_sdpa|BM_tiny|BM_fashion'}
        for r in 1 2 3; do for b in old new; do
          exe="$P/bin/gltensor_bench"; lib=$P/lib; [ $b = old ] && exe="$P/bin/gltensor_bench_old" lib=$P/oldlib:$P/lib
          LD_LIBRARY_PATH=$lib timeout 200 "$exe" --benchmark_min_time=0.1 --benchmark_filter="$f" --benchmark_format=json \
            --benchmark_out="$OUT/ab_${b}_$r.json" > /dev/null 2>&1; echo "ab $b round $r rc=$?"
        done; done
        python3 "$P/ab_compare.py" --old "$OUT"/ab_old_*.json --new "$OUT"/ab_new_*.json \
          --device "$(nvidia-smi --query-gpu=name --format=csv,noheader)" --command "bash gpu-pack/run.sh ab" | tee "$OUT/ab.md" ;;
    precision) # f16 precision mode and bf16 tensors (docs/precision.md): the tests, the error tables, f32 vs f16 speed
        timeout 200 "$P/bin/test_precision" --gtest_brief=1 2>&1 | tail -30 | tee "$OUT/precision.txt"
        timeout 100 "$P/bin/test_precision_bf16" --gtest_brief=1 2>&1 | tail -8 | tee -a "$OUT/precision.txt"
        timeout 300 "$P/bin/gltensor_precision_error" 2>&1 | tee -a "$OUT/precision.txt"
        timeout 300 "$P/bin/gltensor_bench" --benchmark_min_time=0.2 \
          --benchmark_filter='BM_matmul/|BM_matmul_f16math|BM_conv2d' 2>&1 | tee -a "$OUT/precision.txt" ;;
    f16mm) # issue 20: the packed-half f16 matmul kernel (GLTENSOR_F16_MATMUL=f16x2) against f32 math and today's
        # f16x4 forms, each process with its own f32 rows; the f16 extension it is compiled with (GLTENSOR_F16_EXT:
        # NV_gpu_shader5 by default, AMD_gpu_shader_half_float, on GLES and desktop GL); the program binaries'
        # NVIDIA assembly (strings) of one f16x2 run, to see which instructions its f16 FMAs became;
        # elementwise on f16 tensors against f32 tensors.
        log="$OUT/f16mm.txt"
        timeout 120 "$P/bin/test_precision" --gtest_filter='Precision.F16*' 2>&1 | tail -8 | tee "$log"
        for api in gles gl; do GLTENSOR_API=$api timeout 30 "$P/bin/gltensor-info" --extensions 2>&1 |
          grep -o -E 'GL_(AMD_gpu_shader_half_float|NV_gpu_shader5|EXT_shader_explicit_arithmetic_types_float16)' |
          sort -u | sed "s/^/$api: /" | tee -a "$log"; done
        mm='^BM_matmul(_f16math)?/f(32|16)/(1024|2048|4096)/'
        for form in f16x4 f16x2; do
          echo "== GLTENSOR_F16_MATMUL=$form" | tee -a "$log"
          GLTENSOR_PRECISION=f16-matmul GLTENSOR_F16_MATMUL=$form timeout 120 "$P/bin/gltensor_bench" --benchmark_min_time=0.2 \
            --benchmark_filter="$mm" 2>&1 | grep BM_ | tee -a "$log"
        done
        for api in gles gl; do for ext in nv amd; do
          echo "== f16x2, GLTENSOR_API=$api GLTENSOR_F16_EXT=$ext" | tee -a "$log"
          GLTENSOR_API=$api GLTENSOR_F16_EXT=$ext timeout 60 "$P/bin/test_precision" --gtest_filter='Precision.F16x2*' \
            --gtest_brief=1 2>&1 | tail -3 | tee -a "$log"
          GLTENSOR_API=$api GLTENSOR_F16_EXT=$ext GLTENSOR_PRECISION=f16-matmul GLTENSOR_F16_MATMUL=f16x2 timeout 60 \
            "$P/bin/gltensor_bench" --benchmark_min_time=0.2 --benchmark_filter='^BM_matmul(_f16math)?/f(32|16)/4096/' 2>&1 |
            grep -E 'BM_|rror' | tee -a "$log"
        done; done
        # The kernel with explicit fma(f16vec2(a), b, h) (from this tree's glsl/, GLTENSOR_GLSL_DIR).
        mkdir -p /tmp/f16mm-fma && sed 's/h\[\([^]]*\)\] += s \* \(b[0-3]\);/h[\1] = fma(f16vec2(s), \2, h[\1]);/' \
          glsl/ops/matmul_f16x2.comp > /tmp/f16mm-fma/matmul_f16x2.comp
        echo "== f16x2 with fma() ($(grep -c 'fma(f16vec2' /tmp/f16mm-fma/matmul_f16x2.comp) lines)" | tee -a "$log"
        GLTENSOR_GLSL_DIR=/tmp/f16mm-fma GLTENSOR_PRECISION=f16-matmul GLTENSOR_F16_MATMUL=f16x2 timeout 60 \
          "$P/bin/gltensor_bench" --benchmark_min_time=0.2 --benchmark_filter='^BM_matmul(_f16math)?/f(32|16)/4096/' 2>&1 |
          grep -E 'BM_|rror' | tee -a "$log"
        # The experimental pairs-along-K form (bench/f16x2_dot2: vector x vector FMAs, no broadcast), checked then timed.
        echo "== f16x2 dot2 (GLTENSOR_GLSL_DIR=bench/f16x2_dot2)" | tee -a "$log"
        GLTENSOR_GLSL_DIR=bench/f16x2_dot2 timeout 60 "$P/bin/test_precision" --gtest_filter='Precision.F16x2*' \
          --gtest_brief=1 2>&1 | tail -3 | tee -a "$log"
        GLTENSOR_GLSL_DIR=bench/f16x2_dot2 GLTENSOR_PRECISION=f16-matmul GLTENSOR_F16_MATMUL=f16x2 timeout 60 \
          "$P/bin/gltensor_bench" --benchmark_min_time=0.2 --benchmark_filter='^BM_matmul(_f16math)?/f(32|16)/(2048|4096)/' \
          2>&1 | grep -E 'BM_|rror' | tee -a "$log"
        rm -rf /tmp/f16mm-bins && mkdir -p /tmp/f16mm-bins "$OUT/f16mm-asm"
        GLTENSOR_CACHE_DIR=/tmp/f16mm-bins GLTENSOR_PRECISION=f16-matmul GLTENSOR_F16_MATMUL=f16x2 timeout 60 \
          "$P/bin/gltensor_bench" --benchmark_min_time=0.05 --benchmark_filter='^BM_matmul_f16math/f16/4096/' > /dev/null 2>&1
        for b in /tmp/f16mm-bins/*.bin; do strings -n 3 "$b" > "$OUT/f16mm-asm/$(basename "$b").txt"; done
        grep -l -i -E 'f16|h[0-9]' "$OUT"/f16mm-asm/*.txt | head -20 | tee -a "$log"
        timeout 60 "$P/bin/gltensor_bench" --benchmark_min_time=0.2 --benchmark_filter='^BM_elementwise(_f16)?/(add|mul)' 2>&1 |
          grep BM_ | tee -a "$log" ;;
    lab) timeout 300 "$P/bin/gltensor_kernel_lab" ${LAB_FILTER:-} 2>&1 | tee "$OUT/lab.txt" ;;
    mm) # issue 21: f32 matmul, the planner's choice and the kernels' forms (lab modes warp and splitk;
        # LAB_CANDS narrows the forms) against PyTorch's cuBLAS (TF32 off) at the same shapes, same run
      timeout 240 "$P/bin/gltensor_kernel_lab" warp 2>&1 | tee "$OUT/mm.txt"
      timeout 120 "$P/bin/gltensor_kernel_lab" splitk 2>&1 | tee -a "$OUT/mm.txt"
      timeout 120 python3 "$P/torch_matmul.py" 2>&1 | tee -a "$OUT/mm.txt"
      timeout 60 python3 "$P/torch_matmul.py" 256x2048x8192 512x2048x2048 384x1152x16384 384x1152x2048 \
        2>&1 | tee -a "$OUT/mm.txt" ;;
    labvariants) # the library's kernel Variants through Launch (bench/kernel_lab_variants.cpp): checked, then timed
      timeout 120 "$P/bin/gltensor_kernel_lab" --check variants 2>&1 | tee "$OUT/labvariants.txt"
      timeout 300 "$P/bin/gltensor_kernel_lab" variants 2>&1 | tee -a "$OUT/labvariants.txt" ;;
    benchf) timeout 300 "$P/bin/gltensor_bench" --benchmark_min_time=0.2 --benchmark_filter="$BENCH_FILTER" 2>&1 | tee -a "$OUT/benchf.txt" ;;
    int8) # quantized kernels (QDQ MatMul / Conv as gltensor runs them) against float32, same run (ratio column)
           timeout 300 "$P/bin/gltensor_int8_bench" 2>&1 | tee "$OUT/int8.txt"
           timeout 120 "$P/bin/test_quant_int" --gtest_brief=1 2>&1 | tail -3 | tee -a "$OUT/int8.txt" ;;
    onnx) timeout 300 "$P/bin/gltensor-onnx-test" --quiet "$P/onnx-node" 2>&1 | grep -v "performance warning" | tee "$OUT/onnx.txt" ;;
    diag) for fb in 0 1; do
            echo "== GLTENSOR_FULL_BARRIERS=$fb"
            GLTENSOR_FULL_BARRIERS=$fb GLTENSOR_TEST_SEED=8227768616368950540 "$P/bin/test_nn" --gtest_brief=1 --gtest_filter='Losses*' 2>&1 | grep -E "Failure|grad\[|forward|PASSED|FAILED" | head -6
            GLTENSOR_FULL_BARRIERS=$fb GLTENSOR_TEST_SEED=6380846010036783877 "$P/bin/test_nn" --gtest_brief=1 --gtest_filter='Attention*' 2>&1 | grep -E "Failure|grad\[|forward|PASSED|FAILED" | head -6
          done 2>&1 | tee "$OUT/diag.txt" ;;
    interop) # graphics apps (bench/RESULTS.md): per-call cost adopted vs Device::open with and without
             # NVIDIA's threaded optimisations, the 1920x1080 texture -> conv2d -> texture frame against
             # a raw compute shader (GLES and desktop GL through EGL), then the interop tests.
             for api in gles gl; do for thr in 0 1; do
               echo "== --api $api, __GL_THREADED_OPTIMIZATIONS=$thr"
               __GL_THREADED_OPTIMIZATIONS=$thr timeout 240 "$P/bin/gltensor_interop_bench" --api $api --frames 1000 --rounds 5; echo "rc=$?"
             done; done 2>&1 | tee "$OUT/interop.txt"
             for t in "$P"/bin/test_interop_* "$P/bin/test_conv_direct"; do
               timeout 120 "$t" --gtest_brief=1 > /tmp/t.log 2>&1; rc=$?
               echo "$(basename "$t") rc=$rc $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' /tmp/t.log | tr '\n' ' ')" | tee -a "$OUT/interop.txt"
               [ $rc -ne 0 ] && grep -E -A8 "Failure|error|exception" /tmp/t.log | head -60 >> "$OUT/interop.txt"
             done ;;
    profile) for m in cnn mlp; do timeout 120 "$P/bin/gltensor_train_profile" --model $m --steps ${PROFILE_STEPS:-40} 2>&1 | tee -a "$OUT/profile.txt"; done ;;
    torchtrain) timeout 300 python3 "$P/torch_train_reference.py" "$P/data" --epochs ${TORCH_EPOCHS:-2} 2>&1 | tee "$OUT/torchtrain.txt" ;;
    ocr) # the OCR demo on its sample (accuracy) and on a 960x960 page, first and warm runs
         mkdir -p /usr/share/fonts/truetype/dejavu && cp -n "$P/fonts/DejaVuSans.ttf" /usr/share/fonts/truetype/dejavu/
         (cd /tmp && timeout 300 "$P/bin/ocr" --models "$P/models/ocr" --bench 20 --out "$OUT/ocr_out.png" 2>&1 | tee "$OUT/ocr.txt")
         (cd /tmp && timeout 300 "$P/bin/ocr" --models "$P/models/ocr" --cls --f16 --bench 20 --out /tmp/ocr_f16.png 2>&1 | tee -a "$OUT/ocr.txt")
         # issue 21: the 960x960 page of many lines (det + cls + rec batched by width as PaddleOCR)
         (cd /tmp && timeout 300 "$P/bin/ocr" --models "$P/models/ocr" --page --cls --bench 20 --out "$OUT/ocr_page.png" 2>&1 | tee -a "$OUT/ocr.txt")
         for m in det rec; do
           f=$([ $m = det ] && echo x=1x3x640x640 || echo x=1x3x48x320)
           timeout 120 "$P/bin/gltensor-run" "$P/models/ocr/ch_PP-OCRv4_${m}_infer.onnx" --shape $f --bench 50 --profile 2>&1 | tee -a "$OUT/ocr.txt"
         done ;;
    modelort) # tests/model's ONNX Runtime comparisons on the GPU: python3's onnxruntime through
              # ort_run.py (the pack has no node / onnxruntime-node); after pack_gpu.sh --ocr
              GLTENSOR_ORT_PYTHON="$P/bench/ort_run.py" GLTENSOR_MODEL_CACHE="$P" timeout 400 "$P/bin/test_model" 2>&1 |
                grep -E "^\[ *(OK|SKIPPED|FAILED|PASSED) |Failure|Expected|Which is|output" | tee "$OUT/modelort.txt" ;;
    qdq) # issue 22: a QDQ-quantized CNN (uint8 activations, int8 weights) against its f32 form;
         # after pack_gpu.sh --ocr (the model bench)
         timeout 300 "$P/bin/gltensor_model_bench" --qdq --runs ${QDQ_RUNS:-20} 2>&1 | tee "$OUT/qdq.txt"
         # the same with the QDQ convolutions' GEMM on im2col's columns (im2col + the integer matmul
         # with Relu / QuantizeLinear in its epilogue) instead of the implicit GEMM, then the direct
         # kernel's and the implicit GEMM's tests on this GPU
         GLTENSOR_ICONV_GEMM=im2col timeout 300 "$P/bin/gltensor_model_bench" --qdq --runs ${QDQ_RUNS:-20} 2>&1 |
           sed 's/^/im2col: /' | tee -a "$OUT/qdq.txt"
         # each QDQ conv layer (112x112) under the integer GEMM's forms against f32 conv2d, and the
         # wide net's four layers as one chain, in one process (bench/iconv_forms_bench.cpp)
         timeout 120 "$P/bin/gltensor_iconv_forms_bench" --size 112 --chain 10 2>&1 | tee -a "$OUT/qdq.txt"
         timeout 300 "$P/bin/test_iconv_direct" --gtest_brief=1 2>&1 | tail -3 | tee -a "$OUT/qdq.txt"
         timeout 300 "$P/bin/test_iconv_implicit" --gtest_brief=1 2>&1 | tail -3 | tee -a "$OUT/qdq.txt"
         timeout 300 "$P/bin/test_imatmul_forms" --gtest_brief=1 2>&1 | tail -3 | tee -a "$OUT/qdq.txt"
         # in the same run: the integer matmul's 64x128 tiles of 8x8, and separate Relu /
         # QuantizeLinear after the matmul
         GLTENSOR_IMATMUL_TILE=128 timeout 300 "$P/bin/gltensor_model_bench" --qdq --runs ${QDQ_RUNS:-20} 2>&1 |
           sed 's/^/tile 128: /' | tee -a "$OUT/qdq.txt"
         GLTENSOR_QCONV_REQUANT=0 timeout 300 "$P/bin/gltensor_model_bench" --qdq --runs ${QDQ_RUNS:-20} 2>&1 |
           sed 's/^/separate requantize: /' | tee -a "$OUT/qdq.txt"
         timeout 300 "$P/bin/test_model" --gtest_brief=1 --gtest_filter='Model.QdqConvRequantizesInOneNode' 2>&1 | tail -3 | tee -a "$OUT/qdq.txt"
         # the GPU time per run beside the wall time, the pool freed before each model load (the
         # int8 net's GPU time varied per model load: bench/RESULTS.md, int8gap)
         timeout 300 "$P/bin/gltensor_model_bench" --qdq --runs ${QDQ_RUNS:-20} --gpu-time --trim 2>&1 |
           sed 's/^/gpu time, trim: /' | tee -a "$OUT/qdq.txt" ;;
    lstm) # issue 22: the recurrent layers' tests (test_rnn: the sequence kernel and the per-step path
          # against a float64 reference), then an LSTM's per-step cost (seq 64 / 256, hidden 64 / 128 /
          # 256, 1 / 2 directions) against the per-step path (GLTENSOR_RNN=steps) in the same run and
          # ONNX Runtime CPU (python3 onnxruntime); after pack_gpu.sh --ocr (model bench, ort_reference.py)
          timeout 120 "$P/bin/test_rnn" --gtest_brief=1 2>&1 | tail -n 30 | tee "$OUT/lstm.txt"
          timeout 400 "$P/bin/gltensor_model_bench" --lstm --runs 20 --ort-python "$P/bench/ort_reference.py" 2>&1 | tee -a "$OUT/lstm.txt" ;;
    replay) # Recording, ModelOptions::replay and the fused MLP (issues 21, 24): their tests, then per-run
            # cost of the three-Gemm model ([1, 34, 96]), PP-OCRv4 rec 48x320 and det 640: gltensor plain and replayed
            # (gltensor_model_bench: host ms in run(), run ms, end to end) and gltensor-run against
            # PyTorch eager and CUDA-graph replay (onnx_torch_bench.py), all in this one call. The model
            # bench's run_host column: host data in and out through host-visible buffers (issue 21's e2e).
            for t in test_recording test_model_replay test_fused_mlp test_model_host_io; do
              timeout 120 "$P/bin/$t" --gtest_brief=1 > /tmp/t.log 2>&1; rc=$?
              echo "$t rc=$rc $(grep -E '^\[  (PASSED|FAILED) ' /tmp/t.log | tr '\n' ' ')" | tee -a "$OUT/replay.txt"
              [ $rc -ne 0 ] && grep -E -A8 "Failure|error|exception" /tmp/t.log | head -60 >> "$OUT/replay.txt"
            done
            # (the fused MLP, one dispatch, against GLTENSOR_FUSED_MLP=0 and two of its variants)
            timeout 120 "$P/bin/gltensor_model_bench" --runs 500 --save-model /tmp/three_gemm.onnx --mlp-variants 4x4 4 \
              2>&1 | tee -a "$OUT/replay.txt"
            for s in rec:1x3x48x320 det:1x3x640x640; do
              timeout 120 "$P/bin/gltensor_model_bench" --model "$P/models/ocr/ch_PP-OCRv4_${s%%:*}_infer.onnx" \
                --shape x=${s#*:} --runs 100 2>&1 | tee -a "$OUT/replay.txt"
            done
            for s in /tmp/three_gemm.onnx:1x34x96 "$P/models/ocr/ch_PP-OCRv4_rec_infer.onnx:1x3x48x320" \
                     "$P/models/ocr/ch_PP-OCRv4_det_infer.onnx:1x3x640x640"; do
              m=${s%:*}; x=${s##*:}; echo "== $(basename "$m") x=$x"
              for r in "" --replay; do
                timeout 120 "$P/bin/gltensor-run" "$m" --shape x=$x --bench 200 $r 2>&1 | grep -E "^(bench|dispatches)" | sed "s/^/gltensor ${r:-plain}: /"
              done
              timeout 200 python3 "$P/onnx_torch_bench.py" "$m" --shape x=$x --reps 200 2>&1 | tail -4
            done 2>&1 | tee -a "$OUT/replay.txt" ;;
    plan) # Model::run planned once, per-run state, shared barrier intervals (issue 21; after pack_gpu.sh --ocr
          # with OLD_MODEL_BENCH=main's gltensor_model_bench): the tests, then the three-Gemm model and PP-OCRv4
          # rec/det, this build against the old one in interleaved rounds (gltensor_model_bench rows: host and
          # cpu ms in run(), plain and replayed), then dispatches and barriers per run of rec and det.
          for t in test_model_run test_model_replay; do
            timeout 120 "$P/bin/$t" --gtest_brief=1 > /tmp/t.log 2>&1; rc=$?
            echo "$t rc=$rc $(grep -E '^\[  (PASSED|FAILED) ' /tmp/t.log | tr '\n' ' ')" | tee -a "$OUT/plan.txt"
            [ $rc -ne 0 ] && grep -E -A8 "Failure|error|exception" /tmp/t.log | head -60 >> "$OUT/plan.txt"
          done
          timeout 60 "$P/bin/gltensor_model_bench" --runs 10 --save-model /tmp/three_gemm.onnx > /dev/null 2>&1
          for r in 1 2 3; do for b in old new; do
            exe="$P/bin/gltensor_model_bench"; lib=$P/lib; [ $b = old ] && exe="$P/bin/gltensor_model_bench_old" lib=$P/oldlib:$P/lib
            [ -x "$exe" ] || continue
            for s in /tmp/three_gemm.onnx:1x34x96:500 "$P/models/ocr/ch_PP-OCRv4_rec_infer.onnx:1x3x48x320:100" \
                     "$P/models/ocr/ch_PP-OCRv4_det_infer.onnx:1x3x640x640:50"; do
              m=${s%%:*}; rest=${s#*:}; echo "== $b round $r: $(basename "$m") x=${rest%%:*}"
              LD_LIBRARY_PATH=$lib timeout 120 "$exe" --model "$m" --shape x=${rest%%:*} --runs ${rest#*:} 2>&1 | grep -E "^\| Model"
            done
          done; done 2>&1 | tee -a "$OUT/plan.txt"
          for s in rec:1x3x48x320 det:1x3x640x640; do
            echo "== gltensor-run ${s%%:*}"
            timeout 120 "$P/bin/gltensor-run" "$P/models/ocr/ch_PP-OCRv4_${s%%:*}_infer.onnx" --shape x=${s#*:} --bench 50 2>&1 | grep -E "^(dispatches|bench)"
          done 2>&1 | tee -a "$OUT/plan.txt" ;;
    ocrbench) # gltensor vs ONNX Runtime (pip, CPU, every core) on the same inputs; det 640, rec 48x320, OCR
         mkdir -p /usr/share/fonts/truetype/dejavu && cp -n "$P/fonts/DejaVuSans.ttf" /usr/share/fonts/truetype/dejavu/
         python3 -c "import onnxruntime, numpy; print('onnxruntime', onnxruntime.__version__)" 2>&1 | tee "$OUT/ocrbench.txt"
         # ocr960: the 960x960 page (det + cls + rec), one row per --rec-batch and --images (the
         # models' inputs cut from the page on the GPU, or made with OpenCV on the host as before),
         # and the time per stage
         timeout 500 "$P/bin/gltensor_ocr_bench" --models "$P/models/ocr" --ort python --source "$P" --runs 20 \
           --rec-batch 6 --rec-batch 12 --images gpu --images host --out /tmp/ocr-bench 2>&1 | tee -a "$OUT/ocrbench.txt"
         # the page as issue 21 measures it, no reference: PaddleOCR's defaults (rec batch 6, det 960) against
         # det 640, batches cut for a per-call cost of 3000 / 6000 columns (no line limit) and replay, cls on and off
         timeout 120 "$P/bin/gltensor_ocr_bench" --models "$P/models/ocr" --ort none --only ocr960 --runs 20 --images gpu \
           --rec-batch 6 --det-limit 960 --out /tmp/ocr-bench 2>&1 | grep "^| OCR" | tee -a "$OUT/ocrbench.txt"
         timeout 200 "$P/bin/gltensor_ocr_bench" --models "$P/models/ocr" --ort none --only ocr960 --runs 20 --images gpu \
           --rec-batch 0 --rec-call-cost 3000 --rec-call-cost 6000 --det-limit 640 --replay 0 --replay 1 --cls 1 --cls 0 \
           --out /tmp/ocr-bench 2>&1 | tee -a "$OUT/ocrbench.txt"
         # the planner's LayerNorm and attention fusions (PP-OCRv4 rec's SVTR blocks) off and on, in one process
         timeout 120 "$P/bin/gltensor_ocr_bench" --models "$P/models/ocr" --ort none --only ocr960 --runs 20 --images gpu \
           --rec-batch 0 --rec-call-cost 3000 --det-limit 640 --replay 1 --cls 0 --fuse 0 --fuse 1 \
           --out /tmp/ocr-bench 2>&1 | tee -a "$OUT/ocrbench.txt" ;;
    graphics) # the graphics demo without X (--headless: its own EGL context without surface, adopted by
         # gltensor) with PP-OCRv4 det on every frame, GLES and desktop GL: per-frame GPU times of the
         # filter and the network; the last frame's scene, map and boxes of each run are kept for a
         # check here (tools/ort-reference/ort_run.js + compare.js, as graphics_demo_net_check does).
         for api in gles gl; do for size in 640x480 1280x704; do
           echo "== --api $api --size $size"
           o="$OUT/graphics_${api}_${size}"
           timeout 240 "$P/bin/graphics_demo" --headless --api $api --size $size --frames 100 \
             --network "det=$P/models/ocr/ch_PP-OCRv4_det_infer.onnx" --screenshot "$o.png" --input "$o-scene.png" \
             --prob "$o-prob.npy" --boxes "$o-boxes.txt"; echo "rc=$?"
         done; done 2>&1 | tee "$OUT/graphics.txt" ;;
    ocrtest) # model tests; the ONNX Runtime comparisons skip without node, the OCR accuracy test runs
         mkdir -p /usr/share/fonts/truetype/dejavu && cp -n "$P/fonts/DejaVuSans.ttf" /usr/share/fonts/truetype/dejavu/
         for t in test_model test_model_fusion test_model_layernorm test_model_se test_model_attention test_ocr_models; do
           GLTENSOR_MODEL_CACHE="$P" timeout 300 "$P/bin/$t" --gtest_brief=1 2>&1 | tail -15 | tee -a "$OUT/ocrtest.txt"
         done ;;
    mlp|cnn) [ -d "$P/plplot-drivers" ] && export PLPLOT_DRV_DIR="$P/plplot-drivers" PLPLOT_LIB="$P/plplot-lib"
         mkdir -p /usr/share/fonts/truetype/dejavu && cp -n "$P/fonts/DejaVuSans.ttf" /usr/share/fonts/truetype/dejavu/ 2>/dev/null
         (cd /tmp && timeout 450 "$P/bin/fashion_mnist" --data "$P/data" --model $phase --epochs 10 --out /tmp/$phase --overwrite > "$OUT/$phase.txt" 2> /tmp/$phase.err; echo "rc=$?" >> "$OUT/$phase.txt"
          tr '\r' '\n' < /tmp/$phase.err | grep -v '^ *$' | tail -5 >> "$OUT/$phase.txt"; cat "$OUT/$phase.txt")
         cp /tmp/$phase/metrics.json "$OUT/${phase}_metrics.json" ;;
    gpt) # chargpt's default config (the reference's model) for GPT_STEPS steps (300), then PyTorch's
         # reference (torch_gpt_reference.py, eager f32, TF32 off) on the same corpus and steps, in
         # the same call (limits 420 + 150 s: one run call allows 600): compare tokens/s and the
         # validation loss after the same step.
         [ -d "$P/plplot-drivers" ] && export PLPLOT_DRV_DIR="$P/plplot-drivers" PLPLOT_LIB="$P/plplot-lib"
         mkdir -p /usr/share/fonts/truetype/dejavu && cp -n "$P/fonts/DejaVuSans.ttf" /usr/share/fonts/truetype/dejavu/ 2>/dev/null
         (cd /tmp && timeout 420 "$P/bin/chargpt" --config default --steps ${GPT_STEPS:-300} --data "$P/fortunes" \
            --out /tmp/gpt --overwrite > "$OUT/gpt.txt" 2> /tmp/gpt.err; echo "rc=$?" >> "$OUT/gpt.txt"
          tr '\r' '\n' < /tmp/gpt.err | grep -v '^ *$' | tail -8 >> "$OUT/gpt.txt"; cat "$OUT/gpt.txt")
         cp /tmp/gpt/metrics.json "$OUT/gpt_metrics.json"; cp /tmp/gpt/loss.png "$OUT/gpt_loss.png"
         timeout 150 python3 "$P/torch_gpt_reference.py" "$P/fortunes.txt" --steps ${GPT_STEPS:-300} 2>&1 | tee "$OUT/torch_gpt.txt" ;;
    decode) # batch-1 KV-cache decode beside PyTorch's eager decode (the reference's classes and decode
            # loop, the same weights), in the same call: tokens/s and CPU ms per token (bench/decode_bench.py;
            # after pack_gpu.sh --gpt). chargpt's default config: the replayed step, every step unrecorded,
            # int8 and int4 block matrices; 2 and 8 layers (the CPU time per token against the layer count);
            # models whose weights dominate a step more and more (8 layers, d_model 2048, SwiGLU 5632:
            # 1.6 GB in f32; d_model 4096, SwiGLU 11008: 6.5 GB).
            run_decode() { timeout 300 python3 "$P/decode_bench.py" --chargpt "$P/bin/chargpt" --reference "$P/torch_gpt_reference.py" \
              --config default --tokens ${DECODE_TOKENS:-256} "$@" 2>&1 | tee -a "$OUT/decode.txt"; }
            run_decode --modes replay,plain,int8,int4 --json "$OUT/decode.json"
            for l in 2 8; do run_decode --layers $l --modes replay,plain --json "$OUT/decode_layers$l.json"; done
            run_decode --layers 8 --d-model 2048 --heads 16 --ffn 5632 --modes replay,int8,int4 --json "$OUT/decode_big.json"
            run_decode --layers 8 --d-model 4096 --heads 32 --ffn 11008 --tokens 128 --modes replay,int8,int4 \
              --json "$OUT/decode_huge.json" ;;
    attn) # issue 23: the attention tests, then training attention (forward + backward, causal,
          # 8x16x1024xD) beside PyTorch's SDPA in the same call (after pack_gpu.sh --gpt)
          # (the tiled kernels by default; GLTENSOR_ATTENTION=rows: the one-row flash kernels, same run)
          for t in test_attention test_attention_tiled; do
            timeout 300 "$P/bin/$t" --gtest_brief=1 2>&1 | tail -3 | tee -a "$OUT/attn.txt"; done
          timeout 200 "$P/bin/gltensor_bench" --benchmark_filter='BM_sdpa' --benchmark_min_time=0.5 2>&1 | grep '^BM' | tee -a "$OUT/attn.txt"
          GLTENSOR_ATTENTION=rows timeout 200 "$P/bin/gltensor_bench" --benchmark_filter='BM_sdpa_(fwd|train)' \
            --benchmark_min_time=0.5 2>&1 | grep '^BM' | sed 's/^/rows: /' | tee -a "$OUT/attn.txt"
          timeout 120 python3 "$P/torch_attention.py" --fwd --dims 64,128,256 2>&1 | tee -a "$OUT/attn.txt"
          timeout 120 python3 "$P/torch_attention.py" 2>&1 | tee -a "$OUT/attn.txt" ;;
    quant) # issue 24: the quantization and LoRA tests, then decode GEMV over f32 / int8 / int4 weights
           # against a copy's bandwidth (goal: int4 >= 0.7 of it)
           for t in test_quant test_lora test_chargpt_decode; do timeout 300 "$P/bin/$t" --gtest_brief=1 2>&1 | tail -15 | tee -a "$OUT/quant.txt"; done
           timeout 120 "$P/bin/gltensor_quant_bench" --reps ${QUANT_REPS:-200} \
             --shapes ${QUANT_SHAPES:-384x1024,1024x384,4096x4096,14336x4096} 2>&1 | tee -a "$OUT/quant.txt" ;;
    gptquant) # issue 24: chargpt's default config trained (GPT_STEPS, 300), then its validation loss with
              # int8 and int4 block matrices beside f32's (goals: perplexity within 1% and 5%)
         [ -d "$P/plplot-drivers" ] && export PLPLOT_DRV_DIR="$P/plplot-drivers" PLPLOT_LIB="$P/plplot-lib"
         mkdir -p /usr/share/fonts/truetype/dejavu && cp -n "$P/fonts/DejaVuSans.ttf" /usr/share/fonts/truetype/dejavu/ 2>/dev/null
         (cd /tmp && timeout 300 "$P/bin/chargpt" --config default --steps ${GPT_STEPS:-300} --data "$P/fortunes" \
            --out /tmp/gptq --overwrite --sample 0 > "$OUT/gptquant.txt" 2>/dev/null; echo "train rc=$?" >> "$OUT/gptquant.txt")
         for f in int8 int4; do
           timeout 120 "$P/bin/chargpt" --eval /tmp/gptq/chargpt.safetensors --data "$P/fortunes" --quantize $f \
             --sample 100 2>&1 | tee -a "$OUT/gptquant.txt"
         done ;;
  esac
done
