// max/avg/adaptive pooling (pool.comp) with explicit backward.
#include <cmath>

#include "gltensor/autograd.hpp"
#include "gltensor/nn_functional.hpp"
#include "gltensor/ops.hpp"
#include "gltensor/reduce.hpp"
#include "runtime/codegen.hpp"
#include "runtime/launch.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {
using namespace detail;

namespace {

enum Mode { kMax = 0, kAvg = 1, kAdaptive = 2 };

struct PoolGeom {
  std::int64_t N, C, H, W, OH, OW;
  Pool2dOptions o;
};

std::int64_t out_size(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t p, std::int64_t d, bool ceil_mode) {
  const std::int64_t eff = d * (k - 1) + 1;
  const std::int64_t num = in + 2 * p - eff;
  std::int64_t o = (ceil_mode ? (num + s - 1) / s : num / s) + 1;
  if (ceil_mode && (o - 1) * s >= in + p) --o;  // the last window must start inside the input or left padding
  return o;
}

// Uniforms of glsl/nn/pool.comp.
struct PoolParams {
  const PoolGeom& g;
  const Tensor* x;  // forward input (strided)
  std::int64_t count;
  void set(Uniforms& u) const {
    u.i32("u_C", g.C), u.i32("u_H", g.H), u.i32("u_W", g.W), u.i32("u_OH", g.OH), u.i32("u_OW", g.OW);
    u.i32("u_KH", g.o.kernel[0]), u.i32("u_KW", g.o.kernel[1]), u.i32("u_sh", g.o.stride[0]);
    u.i32("u_sw", g.o.stride[1]), u.i32("u_pt", g.o.padding[0]), u.i32("u_pl", g.o.padding[1]);
    u.i32("u_dh", g.o.dilation[0]), u.i32("u_dw", g.o.dilation[1]);
    if (x) {
      const Shape& st = x->strides();
      u.u32s("u_x_stride", {st[0], st[1], st[2], st[3]});
      u.u32("u_x_off", x->offset());
    }
    u.u32("u_count", count);
  }
};

// Longest window along one axis: the kernel, or an adaptive window ceil(I / O) + 1.
std::int64_t window_extent(int mode, std::int64_t in, std::int64_t out, std::int64_t k) {
  return mode == kAdaptive ? (in + out - 1) / out + 1 : k;
}

void launch_pool(int mode, bool backward, const PoolGeom& g, const Tensor& out, const Tensor& in, const Tensor& idx) {
  DeviceImpl& dev = dev_of(out);
  Launch launch(dev, backward ? "pool2d_backward" : "pool2d");
  static const char* names[] = {"pool_max", "pool_avg", "pool_adaptive"};
  std::string h = std::string("#define POOL ") + names[mode] + "\n" + (backward ? "#define BACKWARD 1\n" : "") +
                  (g.o.count_include_pad ? "#define COUNT_PAD 1\n" : "");
  h += operand_glsl(0, out.dtype(), CT::f32, true) + operand_glsl(1, in.dtype(), CT::f32, false);
  if (mode == kMax) h += operand_glsl(2, DType::i32, CT::i32, !backward);
  launch.program("pool.comp", h, {256}).write(out).read(in);
  if (mode == kMax) launch.bind(*idx.impl()->storage, !backward);
  const std::int64_t n = g.N * g.C * g.OH * g.OW;
  // Window loops (rows, and columns in each; max backward has none). The retries of a float
  // atomic add under contention are not counted.
  const std::int64_t kh = window_extent(mode, g.H, g.OH, g.o.kernel[0]);
  const std::int64_t kw = window_extent(mode, g.W, g.OW, g.o.kernel[1]);
  const std::int64_t window = backward && mode == kMax ? 1 : kh * (kw + 1);
  launch.params(PoolParams{g, backward ? nullptr : &in, n})
      .loop_iterations(static_cast<std::uint64_t>(window))
      .invocations(static_cast<std::uint64_t>(n));
}

Tensor pool(const char* op, int mode, const Tensor& x, PoolGeom g) {
  check_defined(op, x);
  if (x.dim() != 4)
    throw ShapeError(std::string("gltensor::") + op + ": expects [N, C, H, W], got " + to_string(x.shape()));
  DeviceImpl& dev = dev_of(x);
  Enter guard(dev, op);  // one entry for the forward's allocations and launch
  g.N = x.size(0), g.C = x.size(1), g.H = x.size(2), g.W = x.size(3);
  if (mode != kAdaptive) {
    for (int d = 0; d < 2; ++d) {
      if (g.o.stride[d] == 0) g.o.stride[d] = g.o.kernel[d];
      if (g.o.kernel[d] <= 0 || g.o.stride[d] <= 0 || g.o.dilation[d] <= 0 || g.o.padding[d] < 0)
        throw ValueError(std::string("gltensor::") + op +
                         ": kernel, stride and dilation must be positive, padding >= 0");
      if (g.o.padding[d] >= g.o.kernel[d])
        throw ValueError(std::string("gltensor::") + op + ": padding " + std::to_string(g.o.padding[d]) +
                         " must be smaller than the kernel size " + std::to_string(g.o.kernel[d]));
    }
    g.OH = out_size(g.H, g.o.kernel[0], g.o.stride[0], g.o.padding[0], g.o.dilation[0], g.o.ceil_mode);
    g.OW = out_size(g.W, g.o.kernel[1], g.o.stride[1], g.o.padding[1], g.o.dilation[1], g.o.ceil_mode);
    if (g.OH <= 0 || g.OW <= 0)
      throw ShapeError(std::string("gltensor::") + op + ": input " + to_string(x.shape()) +
                       " is too small for kernel " + to_string({g.o.kernel[0], g.o.kernel[1]}));
  }
  const DType od = is_floating(x.dtype()) ? x.dtype() : DType::f32;
  Tensor y = alloc(dev, {g.N, g.C, g.OH, g.OW}, od, op);
  Tensor idx = mode == kMax ? alloc(dev, y.shape(), DType::i32, op) : Tensor();
  if (y.numel() > 0) launch_pool(mode, false, g, y, x, idx);
  if (autograd::any_requires_grad({&x})) {
    autograd::record(
        y, {x},
        [g, mode, idx](const Tensor& gy) {
          Tensor gx = zeros(gy.device(), {g.N, g.C, g.H, g.W});
          if (gy.numel() > 0) launch_pool(mode, true, g, gx, gy.contiguous().to(DType::f32), idx);
          return std::vector<Tensor>{gx};
        },
        op);
  }
  return y;
}

}  // namespace

Tensor max_pool2d(const Tensor& x, const Pool2dOptions& o) {
  return pool("max_pool2d", kMax, x, PoolGeom{0, 0, 0, 0, 0, 0, o});
}
Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& o) {
  Pool2dOptions a = o;
  a.dilation = {1, 1};
  return pool("avg_pool2d", kAvg, x, PoolGeom{0, 0, 0, 0, 0, 0, a});
}
Tensor adaptive_avg_pool2d(const Tensor& x, std::array<std::int64_t, 2> os) {
  if (os[0] <= 0 || os[1] <= 0) throw ValueError("gltensor::adaptive_avg_pool2d: output size must be positive");
  Pool2dOptions o;
  o.count_include_pad = false;
  return pool("adaptive_avg_pool2d", kAdaptive, x, PoolGeom{0, 0, 0, 0, os[0], os[1], o});
}
Tensor global_avg_pool2d(const Tensor& x) {
  check_defined("global_avg_pool2d", x);
  if (x.dim() != 4) throw ShapeError("gltensor::global_avg_pool2d: expects [N, C, H, W], got " + to_string(x.shape()));
  return mean(x, {2, 3}, true);
}

}  // namespace gltensor
