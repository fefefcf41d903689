// Matrix products (torch.matmul / ONNX Gemm semantics) on tiled shared-memory GLSL kernels with
// register blocking, f32 accumulation (also for f16/bf16 storage): 64x128 tiles of 8x8 per
// invocation with 128-bit operand loads where operands are quad-aligned and the tiles whole
// (glsl/matmul.comp), else 64x64 (GPUs) or 128x128 (software rasterizers) tiles with scalar loads.
// The quad-load kernel's variants (K split over two halves of a workgroup, inner product
// unrolled) are timed on a GPU on the first use of a (tiles, K, dtype) class and the fastest is
// kept on disk (GLTENSOR_TUNE, GLTENSOR_CACHE_DIR): such a first call takes a few runs longer;
// variants differ only in summation order.
//
// Operands may be any strided views: a transposed operand (x.t(), x.transpose(-1, -2)) is read
// through its strides, never copied. Dtypes: any float or integer dtypes; the result is
// promote_types(a, b) for floats, f32 when both are integers. Errors: ShapeError when inner dims
// differ or batch dims do not broadcast (naming both shapes), LimitError past 2^31 elements.
#pragma once
#include <cstdint>
#include <string>

#include "gltensor/tensor.hpp"

namespace gltensor {

/// Activation fused into the matmul epilogue.
enum class Activation { none, relu, gelu, gelu_tanh, sigmoid, tanh, silu };

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
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
              Activation activation = Activation::none);

/// act(alpha * a @ b + beta * addend) for batched a [..., M, K], b [..., K, N]; addend (may be
/// undefined) broadcastable to the result. The general entry point behind the others.
Tensor matmul_fused(const Tensor& a, const Tensor& b, const Tensor& addend, double alpha, double beta,
                    Activation activation);

/// An activation applied to a matmul or conv2d result (its epilogue), ONNX semantics:
///   relu; clip: min(max(x, p0), p1); hardsigmoid: clamp(p0 * x + p1, 0, 1) (ONNX HardSigmoid,
///   alpha = p0, beta = p1); hardswish: x * relu6(x + 3) / 6; leaky_relu: x < 0 ? p0 * x : x;
///   sigmoid, tanh, silu, gelu (erf form), gelu_tanh.
/// The activations of `Activation` run inside the matmul kernel; the others run as one
/// elementwise op after it for now (hardsigmoid with p1 = 0.5 folds its scale into the kernel's
/// alpha/beta and then runs as one op; other hardsigmoid parameters take three). The results
/// are the same either way. ValueError for clip with p0 > p1.
struct Epilogue {
  enum class Kind : std::uint8_t {
    none,
    relu,
    gelu,
    gelu_tanh,
    sigmoid,
    tanh,
    silu,
    clip,
    hardsigmoid,
    hardswish,
    leaky_relu
  };
  Kind kind = Kind::none;
  double p0 = 0, p1 = 0;

  Epilogue() = default;
  Epilogue(Activation a);  // NOLINT(google-explicit-constructor): an Activation is an Epilogue
  Epilogue(Kind k, double a = 0, double b = 0) : kind(k), p0(a), p1(b) {}
  static Epilogue clip(double min, double max) { return {Kind::clip, min, max}; }
  static Epilogue hardsigmoid(double alpha = 0.2, double beta = 0.5) { return {Kind::hardsigmoid, alpha, beta}; }
  static Epilogue hardswish() { return {Kind::hardswish}; }
  static Epilogue leaky_relu(double slope = 0.01) { return {Kind::leaky_relu, slope}; }
  /// The activation the matmul kernel applies itself (Activation::none when it cannot).
  Activation kernel_activation() const;
  bool operator==(const Epilogue&) const = default;
  /// "relu", "clip(0, 6)", "hardsigmoid(0.2, 0.5)", ...
  std::string name() const;
};

/// Applies an epilogue's activation to x as separate elementwise op(s) (x itself for none).
/// x: floating dtype (DTypeError otherwise); same shape and dtype out.
Tensor apply_epilogue(const Tensor& x, const Epilogue& epilogue);

/// matmul_fused with any epilogue (see Epilogue for what runs inside the kernel).
Tensor matmul_fused(const Tensor& a, const Tensor& b, const Tensor& addend, double alpha, double beta,
                    const Epilogue& epilogue);
/// linear with any epilogue.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const Epilogue& epilogue);

}  // namespace gltensor
