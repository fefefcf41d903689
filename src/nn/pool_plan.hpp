// How 2-D pooling runs (internal): one invocation per output (pool.comp) where a window's loops
// fit the device's loop limit, else two passes of one axis each (pool_axis.comp), each in
// dispatches over ranges of the window's offsets short enough for the limit; the loop lengths
// of both. Pure functions of the geometry and the loop limit, unit-tested without a GPU
// (tests/ops/test_plans.cpp).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "gltensor/dtype.hpp"
#include "gltensor/nn_functional.hpp"
#include "runtime/variant.hpp"

namespace gltensor::detail {

/// pool.comp's POOL and pool_axis.comp's ADAPTIVE: max, average, adaptive average.
enum class PoolMode { max = 0, avg = 1, adaptive = 2 };

struct PoolGeom {
  std::int64_t N, C, H, W, OH, OW;
  Pool2dOptions o;
};

/// Windows along one axis (PyTorch's pooling_output_shape_pad_lr, ONNX's pooling and convolution
/// output shapes): floor((in + p_begin + p_end - d (k - 1) - 1 [+ s - 1 with ceil_mode]) / s) + 1,
/// the division rounding toward minus infinity (not C++'s toward zero); with ceil_mode one less
/// where the last window would start at or past in + p_begin (inside the end padding only).
/// <= 0 where the input is too small: callers throw. s >= 1.
std::int64_t window_out_size(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t p_begin, std::int64_t p_end,
                             std::int64_t d, bool ceil_mode);

/// max_pool2d's and avg_pool2d's options for x of shape [N, C, H, W] (4-D, checked by the
/// caller): stride 0 becomes the kernel; ValueError for a kernel, stride or dilation < 1, padding
/// < 0 or > ((kernel - 1) * dilation + 1) / 2 (PyTorch's rule); ShapeError where H or W gives no window (PyTorch's
/// "output size is too small"), naming op, x's shape, the options and the sizes. Returns {OH, OW} (each >= 1).
std::array<std::int64_t, 2> pool2d_out_hw(const std::string& op, const Shape& x, Pool2dOptions& o);

/// max_pool2d / avg_pool2d (nn_functional.hpp; nn/pooling.cpp) whose errors and autograd node
/// name `op`: max_pool1d and avg_pool1d run as these on [N, C, 1, L].
Tensor max_pool2d_as(const char* op, const Tensor& x, const Pool2dOptions& o);
Tensor avg_pool2d_as(const char* op, const Tensor& x, const Pool2dOptions& o);

/// One axis of a pooling: input positions I, windows O, kernel, stride, padding, dilation.
struct PoolAxis {
  std::int64_t I, O, k, s, p, d;
};
/// Axis 0 is H, 1 is W.
PoolAxis pool_axis(const PoolGeom& g, int axis);

/// A pass of pool_axis.comp: sums (avg, adaptive), maxima with their indices, or the avg
/// gradient (each input position gathers the windows covering it).
enum class PoolPass { sum, max, grad };

/// A dispatch of a pass: the window's offsets [j0, j1) and the loop length of one invocation.
struct PoolPassDispatch {
  std::int64_t j0 = 0, j1 = 0;
  std::uint64_t loop_iterations = 0;
};

/// pool.comp's loops, each counting its exit test: forward, the window's rows and the columns of
/// each; max's backward, none (one atomic add; its retries under contention are not counted).
std::uint64_t pool_direct_loops(PoolMode mode, bool backward, const PoolGeom& g);

/// Whether no input element lies in two windows (stride >= dilation * (kernel - 1) + 1 on both
/// axes): max's backward then gathers (pool.comp's GATHER: every grad_x element written, no
/// zero fill, no atomics).
bool pool_windows_disjoint(const PoolGeom& g);
/// The windows tile the input exactly (stride = kernel, no padding or dilation, H = OH * KH,
/// W = OW * KW: 2 x 2 pooling of even planes), and a window's KH * (KW + 1) loop trips fit the
/// loop limit (0: none): max's backward then writes each window's elements from one invocation.
bool pool_windows_tile(const PoolGeom& g, std::uint64_t loop_limit);
/// The loop trips of that form's invocation.
std::uint64_t pool_tiles_loops(const PoolGeom& g);

/// The dispatches of one pass along an axis (loop_limit 0: no limit, one dispatch).
std::vector<PoolPassDispatch> plan_pool_pass(PoolPass pass, PoolMode mode, const PoolAxis& a, std::uint64_t loop_limit);

struct Pool2dPlan {
  /// direct: pool.comp, one invocation per output. separable: a W pass, then an H pass.
  enum class Path { direct, separable };
  Path path = Path::direct;
  std::uint64_t loop_iterations = 0;             ///< direct: one invocation's loops
  std::vector<PoolPassDispatch> w_pass, h_pass;  ///< separable
};

/// The forward's plan.
Pool2dPlan plan_pool2d(PoolMode mode, const PoolGeom& g, std::uint64_t loop_limit);

/// pool.comp's Variant (runtime/variant.hpp): POOL by name (pool_max, pool_avg, pool_adaptive),
/// BACKWARD (max's backward), COUNT_PAD; max reads or writes the indices (operand 2).
struct PoolVariant {
  static constexpr const char* kFile = "pool.comp";
  PoolMode mode = PoolMode::max;
  bool backward = false, count_pad = false, gather = false;  ///< gather: max's backward, GATHER
  /// GATHER_TILES (with gather): windows that tile the input exactly, one invocation per window
  /// writing its elements (pool_windows_tile)
  bool tiles = false;
  DType out = DType::f32, in = DType::f32;
  Defines defines() const;
  static std::vector<PoolVariant> space();
};

/// pool_axis.comp's Variant: PASS by name (pass_sum, pass_max, pass_grad), AXIS (2 = H, 3 = W),
/// ADAPTIVE, COUNT_PAD (average), ROW_INDEX (the W pass's column indices read, operand 3).
struct PoolAxisVariant {
  static constexpr const char* kFile = "pool_axis.comp";
  PoolPass pass = PoolPass::sum;
  int axis = 2;
  bool adaptive = false, count_pad = false, row_index = false;
  DType in = DType::f32;
  Defines defines() const;
  static std::vector<PoolAxisVariant> space();
};

}  // namespace gltensor::detail
