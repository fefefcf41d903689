#!/usr/bin/env bash
# Packs what the lent GPU machine needs into gpu-pack/ (ignored by git): binaries built here
# (same x86-64), the extra shared libraries they load, the Fashion-MNIST files (or, with
# --onnx, the ONNX node tests instead, or with --ocr the PaddleOCR models (16 MB) and what the
# OCR demo, gltensor-run and gltensor_ocr_bench load, to stay under the 64 MiB carry limit, or
# with --gpt only chargpt, the fortune cookie files and the PyTorch GPT reference),
# PyTorch's reference script and scripts/gpu_run.sh. Then, with `.gl` from
# ../shared/gpu/fetch-gl-runtime.sh:
#   run with carry [".gl", "gpu-pack"]:  bash gpu-pack/run.sh tests onnx bench mlp cnn interop
#   after --ocr:                         bash gpu-pack/run.sh info ocr ocrbench ocrtest graphics replay plan lstm modelort
#   after --train:                       bash gpu-pack/run.sh profile cnn mlp torchtrain
#   after --gpt:                         bash gpu-pack/run.sh info gpt decode
#                                        bash gpu-pack/run.sh info quant gptquant
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DGLTENSOR_BUILD_BENCH=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
exclude=$(git rev-parse --git-path info/exclude)  # .git is a file in a worktree
mkdir -p "$(dirname "$exclude")"
grep -qx '/gpu-pack/' "$exclude" 2>/dev/null || echo '/gpu-pack/' >> "$exclude"
rm -rf gpu-pack && mkdir -p gpu-pack/bin gpu-pack/lib
cp "$build"/tests/test_* "$build"/tools/gltensor-info "$build"/bench/gltensor_bench "$build"/bench/gltensor_kernel_lab \
   "$build"/bench/gltensor_train_profile "$build"/bench/gltensor_int8_bench "$build"/bench/gltensor_quant_bench "$build"/bench/gltensor_latency_bench "$build"/bench/gltensor_interop_bench "$build"/bench/gltensor_precision_error "$build"/demos/fashion_mnist gpu-pack/bin/
cp -L "$build"/libgltensor.so.0 gpu-pack/lib/  # the shared library (BUILD_SHARED_LIBS, the default)
[ -x "$build/tools/gltensor-onnx-test" ] && cp "$build/tools/gltensor-onnx-test" gpu-pack/bin/
rm -f gpu-pack/bin/test_interop_glx  # needs an X display and GLFW's X11 libraries
# A demo that draws with PLplot: its libraries, PLplot's pngcairo driver (PLPLOT_DRV_DIR), its
# fonts and colour maps (PLPLOT_LIB: without them the plots abort at the end of a run), DejaVu Sans.
pack_plot_demo() {
  local drv
  drv=$(ls -d /usr/lib/x86_64-linux-gnu/plplot*/drivers)
  mkdir -p gpu-pack/plplot-drivers && cp "$drv"/cairo.* gpu-pack/plplot-drivers/
  mkdir -p gpu-pack/plplot-lib && cp /usr/share/plplot5.15.0/*.fnt /usr/share/plplot5.15.0/*.pal gpu-pack/plplot-lib/
  ldd "$1" "$drv"/cairo.so | awk '/=> \// {print $3}' | sort -u |
    grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s|ld-linux|libEGL|libGLESv2|libGLdispatch|libGLX|libGL)\.so' |
    xargs -r -I{} cp -L {} gpu-pack/lib/
  mkdir -p gpu-pack/fonts && cp /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf gpu-pack/fonts/
}
if [ "${1:-}" = "--ocr" ]; then
  # Only what the OCR phases run; the other test programs stay home to fit the carry limit.
  rm -f gpu-pack/bin/test_* gpu-pack/bin/gltensor_kernel_lab gpu-pack/bin/fashion_mnist
  cp "$build"/tests/test_ocr_models "$build"/tests/test_model "$build"/tests/test_model_fusion "$build"/tests/test_model_layernorm "$build"/tests/test_model_se \
     "$build"/tests/test_model_attention "$build"/demos/ocr "$build"/tools/gltensor-run \
     "$build"/bench/gltensor_ocr_bench "$build"/demos/graphics_demo gpu-pack/bin/
  # The replay phase: the recording tests, the model bench and PyTorch's eager / CUDA-graph reference;
  # the lstm phase: the recurrent layers' tests and the model bench.
  cp "$build"/tests/test_recording "$build"/tests/test_model_replay "$build"/tests/test_fused_mlp "$build"/tests/test_rnn \
     "$build"/tests/test_model_host_io "$build"/bench/gltensor_model_bench gpu-pack/bin/
  # The plan phase: one model run by several threads (each with its own Device); OCR's batching.
  cp "$build"/tests/test_model_run "$build"/tests/test_ocr_pipeline gpu-pack/bin/
  # The qdq phase: the direct integer convolution against the im2col path, bit for bit; the
  # integer matmul's forms (totals in registers / memory, the requantizing epilogue).
  # The integer GEMM's forms per QDQ conv layer and as the wide net's chain (gltensor_iconv_forms_bench).
  cp "$build"/tests/test_iconv_direct "$build"/tests/test_imatmul_forms "$build"/tests/test_iconv_implicit \
     "$build"/bench/gltensor_iconv_forms_bench gpu-pack/bin/
  cp ../shared/gpu/onnx_torch.py ../shared/gpu/onnx_torch_bench.py gpu-pack/
  ldd gpu-pack/bin/ocr gpu-pack/bin/gltensor-run gpu-pack/bin/graphics_demo | awk '/=> \// {print $3}' | sort -u |
    grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s|ld-linux|libEGL|libGLESv2|libGLdispatch|libGLX|libGL)\.so' |
    xargs -r -I{} cp -L {} gpu-pack/lib/
  cache=${GLTENSOR_MODEL_CACHE:-.cache}
  mkdir -p gpu-pack/models/ocr && cp "$cache"/models/ocr/*.onnx "$cache"/models/ocr/ppocr_keys_v1.txt gpu-pack/models/ocr/
  mkdir -p gpu-pack/bench gpu-pack/fonts && cp bench/ort_reference.py tools/ort-reference/ort_run.py gpu-pack/bench/
  cp /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf gpu-pack/fonts/
fi
if [ "${1:-}" = "--train" ]; then
  # The training phases (profile mlp cnn torchtrain): the demo with its libraries and PLplot's
  # pngcairo driver (PLPLOT_DRV_DIR), no test programs (the carry limit).
  rm -f gpu-pack/bin/test_* gpu-pack/bin/gltensor_kernel_lab gpu-pack/bin/gltensor-onnx-test
  pack_plot_demo "$build"/demos/fashion_mnist
fi
if [ "${1:-}" = "--gpt" ]; then
  # The gpt phase: chargpt with its libraries and PLplot's pngcairo driver, the fortune cookie
  # files (Debian's fortunes, 2.5 MB) and their concatenation for the PyTorch reference
  # (../shared/gpu/torch_gpt_reference.py), no test programs (the carry limit).
  rm -f gpu-pack/bin/* && cp "$build"/demos/chargpt "$build"/tools/gltensor-info "$build"/bench/gltensor_quant_bench \
    "$build"/tests/test_quant "$build"/tests/test_lora "$build"/tests/test_chargpt_decode "$build"/tests/test_attention "$build"/tests/test_attention_tiled \
    "$build"/bench/gltensor_bench gpu-pack/bin/
  pack_plot_demo "$build"/demos/chargpt
  # The corpus as chargpt reads it (files without an extension, sorted bytewise) and as the
  # reference's docstring builds it (cat of `ls -d .../* | grep -v '\.'`).
  mkdir -p gpu-pack/fortunes
  files=$(LC_ALL=C ls -d /usr/share/games/fortunes/* | grep -v '\.')
  cp -L $files gpu-pack/fortunes/
  cat $files > gpu-pack/fortunes.txt
  cp ../shared/gpu/torch_gpt_reference.py bench/decode_bench.py bench/torch_attention.py gpu-pack/
fi
strip gpu-pack/bin/*
for lib in libbenchmark.so.1debian libstb.so.0 libonnx_proto.so.1 libprotobuf.so.32; do
  [ -e "/lib/x86_64-linux-gnu/$lib" ] && cp "/lib/x86_64-linux-gnu/$lib" gpu-pack/lib/
done
if [ "${1:-}" = "--onnx" ]; then cp -r /usr/share/libonnx-testdata/data/node gpu-pack/onnx-node
elif [ "${1:-}" != "--ocr" ] && [ "${1:-}" != "--gpt" ]; then mkdir -p gpu-pack/data && cp /usr/share/datasets/fashion-mnist/*.gz gpu-pack/data/; fi
[ "${1:-}" = "--gpt" ] || cp ../shared/gpu/torch_reference.py ../shared/gpu/torch_train_reference.py bench/compare.py bench/ab_compare.py \
  bench/torch_matmul.py gpu-pack/
# OLD_BENCH=path/to/gltensor_bench of an earlier commit: packed for the `ab` phase.
# Its libgltensor.so.0 (the build folder's, next to bench/) goes to gpu-pack/oldlib: the old
# binary must not load this build's library.
if [ -n "${OLD_BENCH:-}" ]; then
  cp "$OLD_BENCH" gpu-pack/bin/gltensor_bench_old && strip gpu-pack/bin/gltensor_bench_old
  mkdir -p gpu-pack/oldlib && cp -L "$(dirname "$OLD_BENCH")/../libgltensor.so.0" gpu-pack/oldlib/ && strip gpu-pack/oldlib/*
fi
# OLD_MODEL_BENCH=path/to/gltensor_model_bench of an earlier commit (its library to gpu-pack/oldlib
# as above; give OLD_BENCH of the same build): packed for the `plan` phase.
if [ -n "${OLD_MODEL_BENCH:-}" ]; then
  cp "$OLD_MODEL_BENCH" gpu-pack/bin/gltensor_model_bench_old && strip gpu-pack/bin/gltensor_model_bench_old
  mkdir -p gpu-pack/oldlib && cp -L "$(dirname "$OLD_MODEL_BENCH")/../libgltensor.so.0" gpu-pack/oldlib/ && strip gpu-pack/oldlib/*
fi
cp scripts/gpu_run.sh gpu-pack/run.sh
du -sh gpu-pack
