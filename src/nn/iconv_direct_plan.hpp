// How the direct integer convolution (glsl/nn/iconv_direct.comp) runs a QDQ convolution
// (internal): whether it applies, its register blocking, its exact f32 blocks and the loop
// length of one invocation. A pure function of the problem and the device's limits, unit-tested
// without a GPU (tests/nn/test_nn_plans.cpp).
#pragma once
#include <cstdint>
#include <vector>

#include "gltensor/dtype.hpp"
#include "runtime/settings.hpp"
#include "runtime/variant.hpp"

namespace gltensor::detail {

struct IConvDirectProblem {
  std::int64_t CG = 0;  ///< input channels per group
  std::int64_t Og = 0;  ///< output channels per group
  std::int64_t KH = 0, KW = 0;
  std::int64_t OW = 0, stride_w = 1, dilation_w = 1;
  bool narrow_zero_points = false;  ///< both zero points 8-bit of their operand's type, or absent (0)
  std::int64_t positions = 0;       ///< OH * OW (0: unknown, no workgroup-count rule)
  std::int64_t planes = 1;          ///< images N times groups G
};

struct IConvDirectLimits {
  std::uint64_t loop_limit = 0;  ///< the device's loop budget of one invocation (0: none)
  int ssbo_bindings = 16;        ///< the SSBO bindings a compute kernel may use (Capabilities)
  bool software = true;          ///< a software rasterizer (else a GPU: kIConvDirectTapsGpu)
};

struct IConvDirectPlan {
  bool direct = false;         ///< the direct kernel runs (else im2col + the integer matmul)
  std::int64_t opi = 1;        ///< OPI: output channels per invocation (divides Og)
  std::int64_t cb = 1;         ///< CB: channels per exact f32 block (divides CG; CB KH KW <= 256)
  std::int64_t px = 4;         ///< PX: consecutive positions per invocation (one word of 8-bit output)
  bool rowseg = false;         ///< ROWSEG: stride 1 along rows, OW % PX == 0 (a filter row's inputs loaded once)
  std::int64_t seglen = 0;     ///< rowseg: SEGLEN = PX + (KW - 1) dilation_w
  std::uint32_t local_x = 64;  ///< invocations per workgroup
  std::uint64_t loop_iterations = 0;
};

/// Products per exact f32 partial sum: 256 * 255 * 255 < 2^24.
inline constexpr std::int64_t kIConvBlock = 256;
/// Taps per filter (CG KH KW) up to which the direct kernel runs by default: im2col + the integer
/// matmul stage each input value once in shared memory for 64 output channels, the direct kernel
/// reads it from the cache once per OPI channels, so wide filters keep im2col (576: the narrow
/// QDQ CNN of issue 22, 32-64-64-128 channels at 3x3; to be tuned on GPUs with
/// `gltensor_model_bench --qdq` and GLTENSOR_CONV=direct / im2col).
inline constexpr std::int64_t kIConvDirectTaps = 576;
/// The same on GPUs: 32, as f32's conv2d (on the H100 im2col + the integer matmul with its
/// requantizing epilogue ran the QDQ CNN of 32-64-64-128 channels 1.07x / 0.95x f32 at 56x56 /
/// 112x112, the direct kernel 0.67-0.78x / 0.81x: bench/RESULTS.md).
inline constexpr std::int64_t kIConvDirectTapsGpu = 32;
/// Operands of the requantizing kernel (the device must bind them and the loop check's buffer).
inline constexpr int kIConvOperands = 10;

/// The plan. Direct where the zero points are narrow, one channel's taps fit a block, the
/// device binds the operands, the loop fits its budget and the filter has at most
/// kIConvDirectTaps taps; Settings::conv forces im2col (`im2col`) or the direct kernel wherever
/// it can run (`direct`: any number of taps). OPI: all of a group's output
/// channels up to 8, else the largest divisor of Og up to 8; CB: the largest divisor of CG with
/// CB KH KW <= 256; Settings::iconv_groups > 0: OPI lowered (to smaller divisors of Og) until the
/// grid has at least that many workgroups, where the positions are known. PX: 4 (8 and 16, fewer weight loads per
/// position, ran slower on llvmpipe; more registers on GPUs).
IConvDirectPlan plan_iconv_direct(const IConvDirectProblem& p, const IConvDirectLimits& dev, const Settings& settings);

/// The Variant (runtime/variant.hpp) of glsl/nn/iconv_direct.comp.
struct IConvDirectVariant {
  static constexpr const char* kFile = "iconv_direct.comp";
  std::int64_t opi = 1, cb = 1, kh = 1, kw = 1, px = 4;  ///< OPI, CB, KH, KW, PX
  bool rowseg = false;                                   ///< ROWSEG
  std::int64_t dw = 1, seglen = 0;                       ///< rowseg: DW, SEGLEN
  bool bias = false;                                     ///< HAS_BIAS (operand 7)
  /// The requantizing epilogue (output y 8-bit: QUANT with QMIN / QMAX; its activation, none,
  /// relu or clip, is act_clip's bounds in uniforms), else the dequantizing one (float32 y).
  bool quant = false;
  /// DQ_OUT (with quant): the 8-bit value dequantized with (ys, zy), float32 y (`y` stays the
  /// 8-bit type that gives QMIN / QMAX).
  bool dq_out = false;
  /// Operand dtypes: y, x, w, zx, zw (then sa, sb, bias, ys float32), zy.
  DType y = DType::f32, x = DType::u8, w = DType::i8, zx = DType::u8, zw = DType::i8, zy = DType::u8;
  bool zw_none = false;  ///< ZW_NONE: no weight zero point (0; operand 4 undeclared, bound to w)
  Defines defines() const;
  static std::vector<IConvDirectVariant> space();
};

}  // namespace gltensor::detail
