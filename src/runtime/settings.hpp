// Every GLTENSOR_* environment variable, read once (internal). The README lists them for users.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace gltensor::detail {

/// GLTENSOR_MATMUL_KERNEL: the planner's choice, the choice a GPU would get, or a forced variant
/// (vec4 with the s(liced K) and u(nrolled) bits).
enum class MatmulKernelSetting { choose, gpu, vec4, vec4s, vec4u, vec4su, tile64, tile128, reg, gemv, warp };
/// GLTENSOR_CONV: conv2d's forward path and its backward's input gradient.
enum class ConvSetting { choose, direct, im2col };
/// GLTENSOR_CONV_DIRECT: the direct conv kernel's layout.
enum class ConvDirectSetting { choose, rows, lanes, ubo };
/// GLTENSOR_PRECISION ("" and "f32": f32; the others as named, "-" as "_").
enum class PrecisionSetting { f32, f16, f16_matmul, f16_force, f16_emulate, f16_ext_only };
/// GLTENSOR_F16_MATMUL: matmul's f16-math form.
enum class F16MatmulSetting { choose, f16x4, f16x2 };
/// GLTENSOR_F16_EXT: the extension f16 kernels enable.
enum class F16ExtSetting { choose, nv, amd, ext };
/// GLTENSOR_IMATMUL: where the block-f32 integer matmul keeps its int32 totals.
enum class IMatmulSetting { choose, regs, mem, shared };
/// GLTENSOR_ICONV_GEMM: the integer convolution's GEMM form.
enum class IConvGemmSetting { choose, implicit, bytes, im2col };
/// GLTENSOR_QLINEAR_KERNEL: quantized_linear's kernel (gemv: an invocation per K block; words:
/// an invocation per 32-bit word of packed weights).
enum class QlinearKernelSetting { choose, gemv, words, serial, gemm };
/// GLTENSOR_QLINEAR_GEMV=RxUxT[m|p]: the words GEMV's output features per group (R), words per
/// invocation per trip (U) and invocations per group (T), 0 = the plan's choice; m: int4's
/// nibbles decoded through the mantissa (glsl/ops/qlinear.comp's MANTISSA); p: int4 in pairs of
/// adjacent words (PAIRS).
struct QlinearGemvShape {
  int rows = 0, unroll = 0, tpr = 0;
  bool mantissa = false, pairs = false;
};
/// GLTENSOR_UPLOAD_COPY: how the host writes an upload into the mapped ring.
enum class UploadCopySetting { plain, stream, threads, threads_stream };
/// GLTENSOR_RNN: the recurrent layers' time loop.
enum class RnnSetting { choose, steps, units, quads };

/// The settings' values from their environment text; a value outside the list throws ValueError
/// naming the variable and the values it takes.
MatmulKernelSetting parse_matmul_kernel(const std::string& text);
ConvSetting parse_conv(const std::string& text);
ConvDirectSetting parse_conv_direct(const std::string& text);
PrecisionSetting parse_precision(const std::string& text);
F16MatmulSetting parse_f16_matmul(const std::string& text);
F16ExtSetting parse_f16_ext(const std::string& text);
QlinearKernelSetting parse_qlinear_kernel(const std::string& text);
QlinearGemvShape parse_qlinear_gemv(const std::string& text);
RnnSetting parse_rnn(const std::string& text);
int parse_elementwise_quads(const std::string& text);
IMatmulSetting parse_imatmul(const std::string& text);
IConvGemmSetting parse_iconv_gemm(const std::string& text);
/// GLTENSOR_FUSED_MLP into Settings::fused_mlp and fused_mlp_rows.
void parse_fused_mlp(const std::string& text, int& on, std::int64_t& rows, std::int64_t& split);

struct Settings {
  /// GLTENSOR_DEVICE: adapter index or renderer substring ("" = choose).
  std::string device;
  /// GLTENSOR_API=gl: Device::open makes desktop OpenGL core contexts where OpenOptions leave
  /// the API to choose ("gles" or "" = OpenGL ES).
  std::string api;
  /// GLTENSOR_CACHE_DIR ("off" or empty: no cache), else $XDG_CACHE_HOME/gltensor, else
  /// ~/.cache/gltensor: program binaries and tuning choices. Empty path = no cache.
  std::filesystem::path cache_dir;
  /// GLTENSOR_FULL_BARRIERS=1: a memory barrier before every dispatch (diagnoses hazards).
  bool full_barriers = false;
  /// GLTENSOR_STAGING=copy: host transfers through a buffer made per upload and a map per read
  /// (storage.cpp) even where persistent mapping exists ("" or persistent: the mapped ring and
  /// read buffer of host_staging.hpp where the context has buffer storage).
  bool persistent_staging = true;
  /// GLTENSOR_HOST_IO=copy: Model::run_host uploads its inputs into and reads its outputs from
  /// device buffers through the staging above ("" or direct: kernels read small inputs from and
  /// write small outputs into host-visible, persistently mapped buffers; Pool::acquire_host).
  bool direct_host_io = true;
  /// GLTENSOR_HOST_OUTPUT_BYTES=N: a model's outputs of up to N bytes live in host-visible buffers
  /// that the kernels write and the host reads in place (under direct_host_io: a replay's outputs,
  /// and a plain run's outputs of the ops that write their own: FusedMlp, LayerNorm, Softmax);
  /// larger ones go through the read buffer's copy ("" = 256 KiB; 0: none). On the H200 a kernel
  /// writing 903 KB into host memory took 23 us against 7 into its own (bench/RESULTS.md, row36).
  std::size_t host_output_bytes = std::size_t{256} << 10;
  /// GLTENSOR_READ_PIECES=N: a read-back of 1 MiB or more through the mapped read buffer is copied
  /// by the GPU in up to N pieces of at least kPieceBytes (256 KiB), each behind a fence of its own, and the host
  /// copies each piece out as soon as its fence has signaled, while the GPU copies the next ("" =
  /// 8; 1: one copy, one fence). On the H200: 6.1 MB read in 0.21-0.23 ms in 4-8 pieces against
  /// 0.37 in one (bench/RESULTS.md, io37).
  int read_pieces = 8;
  /// GLTENSOR_UPLOAD_PIECES=N (1..64): an upload through the upload ring is written into the ring
  /// and copied by the GPU in as many pieces as keep each within half the ring (4 MiB), and from
  /// 1 MiB in up to N pieces of at least 256 KiB if that is more; each copy is submitted (glFlush)
  /// once its piece is written, so that the GPU copies piece k while the host writes piece k + 1
  /// ("" = 1: on the H200, 2 MB in 0.050 ms in one piece against 0.118 in 8, and 4.7 MB in 0.116
  /// in two pieces against 0.133 in 8; bench/RESULTS.md, upload38).
  int upload_pieces = 1;
  /// GLTENSOR_UPLOAD_COPY=plain|stream|threads|threads-stream: how the host writes an upload of
  /// 256 KiB or more into the ring: memcpy, non-temporal (streaming) stores, split over
  /// host_copy's helper threads (parallel_copy), or both ("" = threads-stream: on the H200 4.7 MB
  /// in 0.18 ms against 0.38 by the threads' memcpy and 0.58 by one memcpy, bench/RESULTS.md,
  /// upload38).
  UploadCopySetting upload_copy = UploadCopySetting::threads_stream;
  /// GLTENSOR_UPLOAD_DIRECT=BYTES: uploads of BYTES or more skip the ring and go to the pool
  /// buffer by glBufferSubData from the caller's memory (0: never; "" (-1) = the device's choice:
  /// every upload on software rasterizers, where the ring's copy is a second memcpy on the
  /// calling thread (llvmpipe: 4.7 MB in 0.08 ms against main's 0.22-0.28, bench/RESULTS.md,
  /// upload38), unless GLTENSOR_STAGING=copy; never on GPUs).
  std::int64_t upload_direct_bytes = -1;
  /// GLTENSOR_CUDA_MEMORY=0: the pool makes every buffer itself ("" or 1: buffers of 4 MiB and
  /// more on memory CUDA allocates, where NVIDIA's GL can import it; runtime/cuda_memory.hpp).
  bool cuda_memory = true;
  /// GLTENSOR_POOL_MIN_CLASS=BYTES: every buffer the pool makes is at least this large (0: the
  /// classes of Pool::size_class, 256 bytes and up). A diagnostic (gltensor_model_bench
  /// --pool-min): whether a kernel's speed follows its buffers' sizes or places; set before the
  /// buffers are made (the free lists are keyed by class).
  std::size_t pool_min_class = 0;
  /// GLTENSOR_MATMUL_KERNEL: vec4|vec4s|vec4u|vec4su|tile64|tile128|reg|gemv|warp forces a matmul variant;
  /// gpu chooses as on a GPU whatever the device (no REG on software rasterizers).
  MatmulKernelSetting matmul_kernel = MatmulKernelSetting::choose;
  /// GLTENSOR_MATMUL_SPLIT=n (1..64): matmul's split-K slices wherever a tiled kernel runs (at
  /// least what the loop limit needs; benches and tests); 0 or "" = the planner's choice.
  int matmul_split = 0;
  /// GLTENSOR_MATMUL_REG_BLOCK=RxQ: the largest register block of the REG kernel where the planner
  /// sizes it to M and N (not the K-sliced form's 4 x 1): R rows (1, 2, 4 or 8) by Q quads of
  /// columns (1 or 2); "" = 8x2. A test knob: on llvmpipe an 8 x 8 block takes LLVM about 4x the
  /// compile of a 4 x 4 one (bench/RESULTS.md, suite16), and the matmul tests sweep their flags at 4x1.
  int matmul_reg_rows = 8, matmul_reg_quads = 2;
  /// GLTENSOR_QLINEAR_KERNEL=gemv|words|serial|gemm forces quantized_linear's kernel ("" = choose:
  /// GEMM past 8 rows of x, else the serial GEMV on software rasterizers and the words GEMV on
  /// GPUs; gemv: the block GEMV).
  QlinearKernelSetting qlinear_kernel = QlinearKernelSetting::choose;
  /// GLTENSOR_QLINEAR_GEMV=RxUxT[m|p] (e.g. 8x2x64 or 8x2x64m): the words GEMV's shape (tuning; R in
  /// 1..16, U in 1..8, T a power of two in 8..256; "" = the plan's choice).
  QlinearGemvShape qlinear_gemv;
  /// GLTENSOR_CONV=direct|im2col forces conv2d's forward path and its backward's input gradient (the direct
  /// kernel with flipped filters where it applies, or col2im of the GEMM); "" = choose (see README).
  ConvSetting conv = ConvSetting::choose;
  /// GLTENSOR_CONV_DIRECT=rows|lanes|ubo forces the direct conv kernel's layout where it applies
  /// ("" = choose: ubo, else rows, on software rasterizers, lanes on GPUs; see nn/conv_direct_plan.hpp).
  ConvDirectSetting conv_direct = ConvDirectSetting::choose;
  /// GLTENSOR_CONV_POINTWISE=im2col: 1x1 convolutions of several images through im2col and one
  /// matmul over every image's positions (the path before); "" or "batched": one batched matmul
  /// of the weights against each image's [C, H*W], no columns matrix (nn/conv_plan.hpp).
  bool conv_pointwise_batched = true;
  /// GLTENSOR_CONV_WINOGRAD=0|2|4: 3x3 stride-1 f32 convolutions without gradient in Winograd's
  /// F(2x2,3x3) or F(4x4,3x3) (2, 4: forced wherever it applies, software rasterizers too), or
  /// never (0); "" = choose (-1: F(4x4,3x3) on GPUs where the plan takes it; nn/conv_plan.hpp).
  int conv_winograd = -1;
  /// GLTENSOR_CONV_WINOGRAD_FUSED=0|1|OxP|OxPxC|OxPxCxF: Winograd's three stages of a conv in one
  /// dispatch (glsl/nn/conv_winograd.comp's WG_FUSED: 1 forced wherever it fits the device, OxP[xC[xF]]
  /// forced with O output channels x P tiles a workgroup, chunks of C input channels, the next
  /// chunk's loads prefetched (F 1) or not (F 0); 0 never); "" = choose (-1: nn/conv_plan.hpp's
  /// plan_winograd_fused).
  int conv_winograd_fused = -1;
  int conv_winograd_block_o = 0, conv_winograd_block_p = 0, conv_winograd_block_c = 0;  ///< 0: the default's
  int conv_winograd_block_f = -1;                                                       ///< -1: the default's
  /// GLTENSOR_CONV_WINOGRAD_SPLIT=1|2|4: the fused stage's input channels over that many workgroups
  /// per block (1: one), "" = choose (0: 2 where each part has 2 chunks or more; nn/conv_plan.hpp's
  /// plan_winograd_fused).
  int conv_winograd_split = 0;
  /// GLTENSOR_IMATMUL=regs|mem|shared: the block-f32 integer matmul (glsl/nn/imatmul.comp)
  /// keeps the int32 totals of K beyond one exact block in registers beside the f32 sums, adds
  /// each block's sums to the output's elements in memory, or keeps them in shared memory ("" =
  /// choose: nn/imatmul_plan.hpp).
  IMatmulSetting imatmul = IMatmulSetting::choose;
  /// GLTENSOR_IMATMUL_BK=8|16: the block-f32 integer matmul's K tile (0 = choose: 16).
  int imatmul_bk = 0;
  /// GLTENSOR_IMATMUL_TILE=32|64|128: the block-f32 integer matmul's tile width on GPUs ("" or 0 =
  /// choose: 128, 4 x 8 per invocation, where that makes at least 256 workgroups, else 64, 4 x 4
  /// (two K slices below 128 workgroups); 32: 4 x 4, a lab form; nn/imatmul_plan.cpp).
  int imatmul_tile = 0;
  /// GLTENSOR_IMATMUL_RB=2: the 64 x 64 tiles on GPUs with 8 x 4 outputs per invocation (128
  /// invocations) instead of 4 x 4; 1: the 64 x 128 tiles (GLTENSOR_IMATMUL_TILE=128) with 4 x 8
  /// (256 invocations) instead of 8 x 8 (0 = choose).
  int imatmul_rb = 0;
  /// GLTENSOR_IMATMUL_BLOCKS=2: the 64 x 64 tiles on GPUs with 8 x 8 outputs per invocation (64
  /// invocations; 0 = choose). 1: software rasterizers' tiles 64 x 64 with 4 x 4 per invocation
  /// (256 invocations, totals in registers) instead of their 8 x 8; GPUs keep their plan. A test
  /// knob: LLVM compiles llvmpipe's 8 x 8 programs in about 4x the CPU of 4 x 4 ones (ctest sets it
  /// for the entries whose integer matmuls serve another op's test; bench/RESULTS.md, suite40c).
  int imatmul_blocks = 0;
  /// GLTENSOR_IMATMUL_SLICES=2: the 64 x 128 tiles of 8 x 8 (GLTENSOR_IMATMUL_TILE=128; or 4 x 4 on
  /// 64 x 32 / 64 x 64) with K in two slices per workgroup (as matmul's sliced VEC4 kernel), the
  /// totals in registers (0 = choose).
  int imatmul_slices = 0;
  /// GLTENSOR_IMATMUL_SWIZZLE=0|1: A's shared tile XOR-swizzled (A_SWIZZLE) off / on for every
  /// integer-matmul form on any device ("" (-1): the plan's choice, the GPUs' 4 x 4 form only;
  /// gltensor_iconv_forms_bench's forms, the tests).
  int imatmul_swizzle = -1;
  /// GLTENSOR_ICONV_GROUPS=n: the direct integer convolution lowers its output channels per
  /// invocation until its grid has at least n workgroups (0 = not: up to 8 channels each).
  std::int64_t iconv_groups = 0;
  /// GLTENSOR_ICONV_GEMM=implicit|im2col: the integer convolutions that take a GEMM (those the
  /// direct integer kernel does not take) read the 8-bit image in place (implicit GEMM,
  /// imatmul.comp's IMPLICIT) or from im2col's columns ("" = choose: implicit wherever it applies);
  /// bytes: implicit, reading the image byte by byte also where whole row words apply (ROWQUAD).
  IConvGemmSetting iconv_gemm = IConvGemmSetting::choose;
  /// GLTENSOR_QCONV_REQUANT=0: a QDQ convolution on the im2col path runs its Relu / Clip and
  /// QuantizeLinear as separate ops instead of in the integer matmul's epilogue.
  bool qconv_requant = true;
  /// GLTENSOR_RNN=steps: LSTM/GRU/RNN run one time step at a time (one dispatch a step, rnn_step.comp,
  /// for batches up to 8 and the cells it covers; else two: a batched matmul and the gate kernel)
  /// wherever the one-dispatch-per-chunk kernel would run (README); units|quads: the sequence
  /// kernel wherever it can run, with one hidden unit per invocation, or 4 (R^T read as quads;
  /// hidden sizes that are multiples of 4) ("" = choose: the sequence kernel up to hidden 256, on
  /// software rasterizers only for small layers and with quads; nn/rnn_plan.hpp).
  RnnSetting rnn = RnnSetting::choose;
  /// GLTENSOR_RNN_REGS=KS,RR[,NG]: the register sequence kernel (rnn_seq_regs.comp) with KS invocations per
  /// hidden unit (a power of 2 dividing the hidden size), RR columns of each gate row per invocation in
  /// registers and NG workgroups per direction and batch row (GPUs) ("" = the plan's, nn/rnn_plan.hpp); for measuring
  /// the forms against each other.
  int rnn_regs_parts = 0, rnn_regs_cols = -1, rnn_regs_grid = 0;
  /// GLTENSOR_RNN_GRID_STALL=1 (tests only): the GRID form's last workgroup of direction 0 and batch row 0 never
  /// counts itself at the step counter, so that the other workgroups' polls give up: the stall path
  /// (ErrorFlags::kStall, a LimitError at the next read) run on purpose.
  bool rnn_grid_stall = false;
  /// GLTENSOR_ELEMENTWISE_QUADS=1|2|4|8: quads per invocation of the elementwise kernels' VEC4
  /// form ("" or 0 = the plan's choice, ops/elementwise_plan.hpp's kElementwiseQuads).
  int elementwise_quads = 0;
  /// GLTENSOR_FUSED_MLP=0: the model planner leaves chains of MatMul/Gemm layers as they are
  /// (fuse_mlp off); 1: fused, one dispatch per chain (nn/fused_mlp.hpp), on every device; R or
  /// RxS: fused with R rows per workgroup (4, 8, ..., 64; default: about 64 workgroups, at most
  /// 16 rows) and S slices of K per layer (1..8; default on GPUs up to 8, 8 k or more each); "" (-1): fused on GPUs
  /// only (on llvmpipe the separate matmul kernels are faster).
  int fused_mlp = -1;
  std::int64_t fused_mlp_rows = 0, fused_mlp_split = 0;
  /// GLTENSOR_STFT_MEL=0: the model planner leaves an STFT's power spectrum and its mel MatMul
  /// as fuse_stft_power's two matmuls (fuse_stft_mel off); 1: one dispatch where nn/stft_mel.hpp's
  /// plan takes the sizes, on every device; F, FxS, FxSxL or FxSxLxQ: that with F frames per
  /// workgroup (1..8), S slices of each DFT sum (1, 2, 4, ..., 32), L invocations (32, 64, ...,
  /// 1024) and Q twiddles in registers (2, 4, ..., 32; 1: each read from the table), 0 for the
  /// plan's (for measuring the forms against each other); "" (-1): one dispatch on GPUs only (on
  /// llvmpipe the two matmul kernels are faster).
  int stft_mel = -1;
  std::int64_t stft_mel_frames = 0, stft_mel_slices = 0, stft_mel_local = 0, stft_mel_twiddles = 0;
  /// GLTENSOR_FUSE_LAYERNORM=0: the model planner leaves LayerNorm written out in ONNX nodes as
  /// it is (fuse_layernorm off; for comparison).
  bool fuse_layernorm = true;
  /// GLTENSOR_FUSE_ATTENTION=0: the model planner leaves attention written out in ONNX nodes as
  /// it is (fuse_attention off; for comparison).
  bool fuse_attention = true;
  /// GLTENSOR_FUSE_ELEMENTWISE=0: the model planner leaves elementwise chains (and the scalar
  /// affine after a Conv) node by node (fuse_elementwise and fuse_conv_affine off; for comparison).
  bool fuse_elementwise = true;
  /// GLTENSOR_FUSE_QDQ_OUTPUT=0: a QDQ net's last DequantizeLinear stays a node of its own rather
  /// than the requantizing QConv's float32 output (fuse_qdq's output step off; for comparison).
  bool fuse_qdq_output = true;
  /// GLTENSOR_FUSE_QDQ_INPUT (on by default; 0 for the QuantizeLinear node): a QDQ net's first QuantizeLinear
  /// is read by the QConv that takes its output, the float32 input quantized as it is loaded where the
  /// implicit GEMM runs the conv, else by a QuantizeLinear op first (fuse_qdq's input step; on the H100
  /// no net slower, the narrow QDQ nets 3-6% faster: bench/RESULTS.md, 2026-11-28, int8ab).
  bool fuse_qdq_input = true;
  /// GLTENSOR_TUNE: -1 default (measure on GPUs only), 0 never, 1 always.
  int tune = -1;
  /// GLTENSOR_ATTENTION=composite: no fused attention kernel.
  bool attention_composite = false;
  /// GLTENSOR_ATTENTION=rows: the flash forward with one query row per invocation
  /// (attention_flash.comp) instead of the register-tiled one (attention_tiled.comp).
  bool attention_rows = false;
  /// GLTENSOR_ATTENTION_UNIFORM_DIMS: -1 (unset) attention_tiled.comp's head dims up to 64 as uniforms (UNIFORM_DIMS)
  /// on software rasterizers, constants on GPUs; 0 constants everywhere, 1 uniforms everywhere (GPUs too: tests).
  int attention_uniform_dims = -1;
  /// GLTENSOR_ATTENTION_BQ / _KEYS = 32: cap the fused attention tiling (0 = no cap).
  int attention_bq = 0, attention_keys = 0;
  /// GLTENSOR_ATTENTION_TILE = 4, 8 or 16: cap the flash kernels' shared-memory tiles (keys per
  /// tile, query rows per tile of the backward; 0 = no cap), so that tests run every tiling.
  int attention_tile = 0;
  /// GLTENSOR_ATTENTION_LANES: -1 (unset) the planner chooses attention_lanes.comp (GPUs, few
  /// row blocks), 0 never, 1 wherever it applies (software rasterizers too: tests).
  int attention_lanes = -1;
  /// GLTENSOR_ATTENTION_LANE_WIDTH = 4, 8, 16 or 32 / GLTENSOR_ATTENTION_LANE_KEYS = 1, 2, 4 or 8:
  /// the lanes kernel's lanes per query row / keys per lane per tile (0 = the plan's).
  int attention_lane_width = 0, attention_lane_keys = 0;
  /// GLTENSOR_ATTENTION_BLOCK: -1 (unset) the planner chooses attention_block.comp (GPUs, few row
  /// blocks, head dims past 16), 0 never, 1 wherever it applies (software rasterizers too: tests).
  int attention_block = -1;
  /// GLTENSOR_ATTENTION_BLOCK_ROWS = 4, 8, 16, 32 / GLTENSOR_ATTENTION_BLOCK_LOCAL = 64, 128, 256,
  /// 512: the block kernel's query rows and invocations per workgroup (0 = the plan's; each forces
  /// the kernel unless GLTENSOR_ATTENTION_BLOCK=0).
  int attention_block_rows = 0, attention_block_local = 0;
  /// GLTENSOR_ATTENTION_SPLIT = 1, 2, 4 or 8: attention.comp's keys split over workgroups in
  /// chunks of that many key tiles wherever the keys pass one chunk (any device); 0: never; unset
  /// (-1): attention_plan's plan_attention_split chooses (GPUs, few row blocks).
  int attention_split = -1;
  /// GLTENSOR_ATTENTION_COMBINE=dispatch: attention.comp's key chunks always merged by
  /// kv_attention.comp's kv_combine in a second dispatch ("" or fused: by the chunks' last
  /// workgroup in the same dispatch where that fits, attention_plan's attention_combine_fits).
  bool attention_combine_dispatch = false;
  /// GLTENSOR_BATCH_NORM_ITERS=64|32|16|8: the training statistics' values per invocation in
  /// batch_norm's first level on any device ("" or 0 = choose: 64 on software rasterizers, 8 on
  /// GPUs; tests run the GPUs' form on llvmpipe so).
  int batch_norm_iters = 0;
  /// GLTENSOR_SUBGROUPS=0: shared-memory fallbacks instead of KHR_shader_subgroup.
  bool subgroups = true;
  /// GLTENSOR_DUMP_SOURCE: print the GLSL of kernels whose file name contains it.
  std::string dump_source;
  /// GLTENSOR_GLSL_DIR: read kernel sources from this folder (searched recursively by file name,
  /// e.g. a copy of glsl/) instead of the embedded ones, where a file of that name is there
  /// (kernel development on a machine without a build; "" = embedded only).
  std::filesystem::path glsl_dir;
  /// GLTENSOR_PRECISION: "f16" opens devices with Precision::f16_allowed (where OpenOptions leave
  /// it unset); "f16-matmul" as "f16", with f16 math in matmul too (slower than f32 on the H100:
  /// DeviceImpl::fp16_matmul); "f16-force" also uses the f16 kernels on devices that report no fp16 arithmetic
  /// (diagnostics only: their GLSL then fails to compile there; with GLTENSOR_DUMP_SOURCE it shows
  /// the f16 kernels' source for an offline compiler). "f16-emulate": the same f16 kernel forms
  /// with f32 types for the f16 ones, on any device (checks their indexing, not f16 rounding).
  /// "f16-ext-only": f32 math, the matmul kernels with the f16 extension enabled (diagnostics).
  /// "" or "f32": f32.
  PrecisionSetting precision = PrecisionSetting::f32;
  /// GLTENSOR_F16_MATMUL: where matmul computes in f16 (above), "f16x2" takes the packed-half
  /// kernel (matmul_f16x2.comp) wherever it applies and "f16x4" the F16_MATH forms of the other
  /// kernels (f16vec4 FMAs on f32 shared memory); "" = the planner's choice (plan_matmul).
  F16MatmulSetting f16_matmul = F16MatmulSetting::choose;
  /// GLTENSOR_F16_EXT=nv|amd|ext (diagnostics): the f16 kernels enable GL_NV_gpu_shader5,
  /// GL_AMD_gpu_shader_half_float (whose float16_t arithmetic is specified as half precision) or
  /// GL_EXT_shader_explicit_arithmetic_types_float16, whether or not the driver lists it ("" =
  /// NV_gpu_shader5 where listed, else the EXT one: DeviceImpl::f16_extension_glsl).
  F16ExtSetting f16_ext = F16ExtSetting::choose;
  /// GLTENSOR_PROFILE=1: the GPU profiler is on from the start and prints at device close.
  bool profile = false;
  /// GLTENSOR_GL_DEBUG=1 (diagnostics): contexts are made as debug contexts (as in debug builds),
  /// whose drivers send more KHR_debug messages (NVIDIA: performance warnings) to the logger.
  bool gl_debug = false;
  /// GLTENSOR_MODEL_TRACE=1: Model::run waits for each node and prints its wall time (debugging;
  /// the profiler's per-node-type GPU time is the measurement).
  bool model_trace = false;
  /// GLTENSOR_CHECK_LOOPS=1 (a CI mode, read when a device opens): kernels count the iterations of
  /// their input-dependent loops (LOOP() in glsl/common/common.glsl) and a launch whose declared
  /// loop_iterations is below what an invocation ran raises LimitError at the next read or
  /// synchronize (ErrorFlags). Off: LOOP(c) is (c), no cost.
  bool check_loops = false;

  /// Reads the environment.
  static Settings from_env();
};

/// The process's settings, read from the environment on first use. Tests may change fields
/// (see ScopedSettings in tests/test_util.hpp); the library reads them where it decides.
Settings& settings();

}  // namespace gltensor::detail
