// Matrix products (torch.matmul / ONNX Gemm semantics) on tiled shared-memory GLSL kernels with
// register blocking, f32 accumulation (also for f16/bf16 storage): 64x128 tiles of 8x8 per
// invocation with 128-bit operand loads where operands are quad-aligned and the tiles whole
// (glsl/ops/matmul_vec4.comp), else 64x64 or 128x128 tiles with scalar loads (matmul_tile64/128.comp)
// or register blocks (matmul_reg.comp: software rasterizers, few rows or columns). On GPUs, over at least 256 tiles of
// 128x128 with b K-major (linear's weight.t()) or row-major in whole tiles (M, N multiples of 128, K of 8): warp-tiled
// kernel (matmul_warp.comp, after S. Boehm's "How to optimize a CUDA matmul kernel for cuBLAS-like performance", kernel
// 10: 256 invocations of 8x8, both operands as quads, K-major ones transposed into padded shared-memory rows, two 8-K
// tiles per loop trip; M, N, K multiples of 4, any tile edges; GLTENSOR_MATMUL_KERNEL=warp forces it where it applies).
// GPUs, fewer than 256 whole 64x128 tiles over K >= 1024: the 64x128 kernel over K chunks, summed, then the epilogue.
// The quad-load kernel's variants (K split over two halves of a workgroup, inner product
// unrolled) are timed on a GPU on the first use of a (tiles, K, dtype) class and the fastest is
// kept on disk (GLTENSOR_TUNE, GLTENSOR_CACHE_DIR; the sliced variants only where their shared
// memory fits the device's, else the unsliced two): such a first call takes a few runs longer; variants differ only in
// summation order.
//
// Operands may be any strided views: a transposed operand (x.t(), x.transpose(-1, -2)) is read
// through its strides, never copied. Dtypes: any float or integer dtypes; the result is
// promote_types(a, b) for floats, f32 when both are integers. Errors: ShapeError when inner dims
// differ or batch dims do not broadcast (naming both shapes), LimitError past 2^31 elements and
// where a kernel forced by GLTENSOR_MATMUL_KERNEL needs more shared memory than the device has
// (naming the kernel, both shapes, the bytes and the limit).
#pragma once
#include <cstdint>
#include <string>

#include "gltensor/tensor.hpp"

namespace gltensor {

/// Activation fused into the matmul epilogue (the same functions as the unary ops of that name).
enum class Activation {
  none,
  relu,
  gelu,       ///< erf form
  gelu_tanh,  ///< tanh approximation
  sigmoid,
  tanh,
  silu,
  leaky_relu,   ///< x > 0 ? x : p0 x (p0 = negative slope)
  hardsigmoid,  ///< clamp(p0 x + p1, 0, 1) (ONNX HardSigmoid: alpha p0, beta p1)
  hardswish,    ///< x relu6(x + 3) / 6
  clip,         ///< clamp(x, p0, p1) (ONNX Clip; relu6 is clip(0, 6)); NaN stays NaN
  log,          ///< natural log (ONNX Log): log(0) = -inf, log(x < 0) = NaN
  square,       ///< x * x (a power spectrum's |X|^2 of an STFT's (re, im) columns)
};

/// An activation with its parameters, applied after alpha, the addend and the bias:
/// y = act(alpha * a @ b + beta * addend), inside the matmul kernel (glsl/common/activations.glsl)
/// where no gradient is recorded, else as the same unary ops after it. Implicit from an
/// Activation (default parameters as torch: leaky_relu 0.01, hardsigmoid 1/6 and 0.5, clip 0
/// and 6); the factories take ONNX's parameters and defaults. `scale` and `shift` follow the
/// activation: y = act(...) * scale + shift (scalars; PP-LCNetV3's learnable affine blocks after
/// HardSwish, fused by the model runtime's planner). Ops that take an Epilogue apply them (in the
/// kernel or as ops after it), but for the interop filters, which throw ValueError.
struct Epilogue {
  Activation act = Activation::none;
  float p0 = 0, p1 = 0;
  float scale = 1, shift = 0;
  Epilogue() = default;
  Epilogue(Activation a);  // NOLINT(google-explicit-constructor): an Activation is an Epilogue
  Epilogue(Activation a, double p0, double p1 = 0) : act(a), p0(static_cast<float>(p0)), p1(static_cast<float>(p1)) {}
  /// ONNX Clip(min, max) (ValueError at use if min > max), HardSigmoid(alpha, beta),
  /// HardSwish, LeakyRelu(alpha).
  static Epilogue clip(double min, double max) { return {Activation::clip, min, max}; }
  static Epilogue hardsigmoid(double alpha = 0.2, double beta = 0.5) { return {Activation::hardsigmoid, alpha, beta}; }
  static Epilogue hardswish() { return {Activation::hardswish, 0, 0}; }
  static Epilogue leaky_relu(double slope = 0.01) { return {Activation::leaky_relu, slope, 0}; }
  bool operator==(const Epilogue&) const = default;
  /// Whether scale and shift change anything (scale != 1 or shift != 0).
  bool affine() const { return scale != 1 || shift != 0; }
  /// Whether the epilogue is the identity (no activation, no affine).
  bool none() const { return act == Activation::none && !affine(); }
  /// "relu", "clip(0, 6)", "hardsigmoid(0.2, 0.5)", "hardswish*0.9+0.1", ...
  std::string name() const;
};

/// The epilogue's activation applied to x as separate (differentiable) unary ops; x itself for
/// none. x: floating dtype; same shape and dtype out.
Tensor apply_epilogue(const Tensor& x, const Epilogue& epilogue);

/// torch.matmul: 1-D x 1-D is a dot product (0-dim result); a 1-D left operand is treated as
/// [1, K] and a 1-D right operand as [K, 1] (the added dim is removed); >= 2-D operands are
/// batches of matrices whose batch dims broadcast. a [..., M, K] @ b [..., K, N] -> [..., M, N].
Tensor matmul(const Tensor& a, const Tensor& b);

/// ONNX Gemm: alpha * op(a) @ op(b) + beta * c, op = transpose when trans_*; a, b 2-D, c (may be
/// undefined) broadcastable to [M, N].
Tensor gemm(const Tensor& a, const Tensor& b, const Tensor& c = Tensor(), double alpha = 1.0, double beta = 1.0,
            bool trans_a = false, bool trans_b = false);

/// act(x @ weight^T + bias) in one kernel (torch.nn.functional.linear plus activation).
/// x [..., in], weight [out, in], bias [out] or undefined -> [..., out].
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), const Epilogue& epilogue = {});

/// act(alpha * a @ b + beta * addend) for batched a [..., M, K], b [..., K, N]; addend (may be
/// undefined) broadcastable to the result. The general entry point behind the others. The
/// activation is fused into the kernel's epilogue; where the product is split over K (long K
/// with few output tiles, or longer than one invocation may loop: see Capabilities::
/// max_loop_iterations) the partial products are summed and the epilogue applied afterwards.
Tensor matmul_fused(const Tensor& a, const Tensor& b, const Tensor& addend, double alpha, double beta,
                    const Epilogue& epilogue);

}  // namespace gltensor
