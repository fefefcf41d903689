// max/avg/adaptive pooling (pool.comp, pool_axis.comp) with explicit backward.
#include <algorithm>
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

bool x_empty(const PoolGeom& g) { return g.N * g.C * g.H * g.W == 0; }

// Longest window along one axis: the kernel, or an adaptive window ceil(I / O) + 1.
std::int64_t window_extent(int mode, std::int64_t in, std::int64_t out, std::int64_t k) {
  return mode == kAdaptive ? (in + out - 1) / out + 1 : k;
}

// pool.comp's loops, each counting its exit test: forward, the window's rows and the columns of
// each; max's backward, none (one atomic add; its retries under contention are not counted).
std::uint64_t direct_loops(int mode, bool backward, const PoolGeom& g) {
  if (backward) return 1;
  const std::int64_t kh = window_extent(mode, g.H, g.OH, g.o.kernel[0]);
  const std::int64_t kw = window_extent(mode, g.W, g.OW, g.o.kernel[1]);
  return static_cast<std::uint64_t>(kh * (kw + 2) + 1);
}

// pool.comp: the forward of every mode, max's backward.
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
  launch.params(PoolParams{g, backward ? nullptr : &in, n})
      .loop_iterations(direct_loops(mode, backward, g))
      .invocations(static_cast<std::uint64_t>(n));
}

// One axis of a pooling: input positions I, windows O, kernel, stride, padding, dilation.
struct AxisGeom {
  std::int64_t I, O, k, s, p, d;
};
AxisGeom axis_geom(const PoolGeom& g, int axis) {
  return {axis ? g.W : g.H, axis ? g.OW : g.OH, g.o.kernel[axis],
          g.o.stride[axis], g.o.padding[axis],  g.o.dilation[axis]};
}

enum class Pass { sum, max, grad };

// Uniforms of glsl/nn/pool_axis.comp.
struct AxisParams {
  const Tensor &out, &in;
  const AxisGeom& a;
  std::int64_t j0, j1;
  bool accum, last;
  std::int64_t W;
  void set(Uniforms& u) const {
    u.u32("u_count", out.numel());
    const Shape& s = out.shape();
    u.u32s("u_shape", {s[0], s[1], s[2], s[3]});
    const Shape& st = in.strides();
    u.u32s("u_in_stride", {st[0], st[1], st[2], st[3]});
    u.u32("u_in_off", in.offset());
    u.i32("u_I", a.I), u.i32("u_O", a.O), u.i32("u_k", a.k), u.i32("u_s", a.s), u.i32("u_p", a.p);
    u.i32("u_d", a.d), u.i32("u_j0", j0), u.i32("u_j1", j1), u.i32("u_accum", accum), u.i32("u_last", last);
    u.i32("u_W", W);
  }
};

// Longest loop of a pass: a window's offsets, or the windows covering one input position.
std::int64_t pass_extent(Pass pass, int mode, const AxisGeom& a) {
  if (pass == Pass::grad) return mode == kAdaptive ? (a.O + a.I - 1) / a.I + 2 : (a.k + a.s - 1) / a.s + 1;
  return mode == kAdaptive ? (a.I + a.O - 1) / a.O + 1 : a.k;
}

// One pass of pool_axis.comp along `axis` (2 = H, 3 = W): `out` (f32, contiguous) from `in`, in
// as many dispatches as the loop limit needs (each over a range of the window's offsets, adding
// to or comparing with what the one before wrote). Max: indices to idx_out, with idx_in the W
// pass's column indices (the H pass: flat h * W + w).
void axis_pass(const char* op, Pass pass, int mode, bool count_pad, int axis, const AxisGeom& a, const Tensor& out,
               const Tensor& in, const Tensor& idx_out = Tensor(), const Tensor& idx_in = Tensor(),
               std::int64_t W = 0) {
  DeviceImpl& dev = dev_of(out);
  static const char* names[] = {"pass_sum", "pass_max", "pass_grad"};
  std::string h = std::string("#define PASS ") + names[static_cast<int>(pass)] + "\n#define AXIS " +
                  std::to_string(axis) + "\n" + (mode == kAdaptive ? "#define ADAPTIVE 1\n" : "") +
                  (count_pad && mode == kAvg ? "#define COUNT_PAD 1\n" : "") +
                  (idx_in.defined() ? "#define ROW_INDEX 1\n" : "");
  h += operand_glsl(0, DType::f32, CT::f32, true) + operand_glsl(1, in.dtype(), CT::f32, false);
  if (pass == Pass::max) h += operand_glsl(2, DType::i32, CT::i32, true);
  if (idx_in.defined()) h += operand_glsl(3, DType::i32, CT::i32, false);
  const std::int64_t extent = pass_extent(pass, mode, a);
  const std::uint64_t limit = dev.loop_limit();
  const std::int64_t chunk = limit == 0 ? extent : std::max<std::int64_t>(1, static_cast<std::int64_t>(limit) - 2);
  for (std::int64_t j0 = 0; j0 < extent; j0 += chunk) {
    const std::int64_t j1 = std::min(extent, j0 + chunk);
    Launch launch(dev, op);
    launch.program("pool_axis.comp", h, {256}).write(out).read(in);
    if (pass == Pass::max) launch.write(idx_out);
    if (idx_in.defined()) launch.read(idx_in);
    // Loops: this dispatch's offsets and the exit test.
    launch.params(AxisParams{out, in, a, j0, j1, j0 > 0, j1 == extent, W})
        .loop_iterations(static_cast<std::uint64_t>(j1 - j0 + 1))
        .invocations(static_cast<std::uint64_t>(out.numel()));
  }
}

// The forward in two passes (W, then H) into y32 (f32) and, for max, idx.
void pool_separable(int mode, const PoolGeom& g, const Tensor& x, const Tensor& y32, const Tensor& idx) {
  DeviceImpl& dev = dev_of(x);
  const AxisGeom ah = axis_geom(g, 0), aw = axis_geom(g, 1);
  const Tensor t = alloc(dev, {g.N, g.C, g.H, g.OW}, DType::f32, "pool2d");
  if (mode == kMax) {
    const Tensor cols = alloc(dev, t.shape(), DType::i32, "pool2d");
    axis_pass("pool2d", Pass::max, mode, false, 3, aw, t, x, cols);
    axis_pass("pool2d", Pass::max, mode, false, 2, ah, y32, t, idx, cols, g.W);
  } else {
    axis_pass("pool2d", Pass::sum, mode, g.o.count_include_pad, 3, aw, t, x);
    axis_pass("pool2d", Pass::sum, mode, g.o.count_include_pad, 2, ah, y32, t);
  }
}

// The avg gradient (f32 [N, C, H, W]) of gy (f32 [N, C, OH, OW]): each input position gathers
// the windows covering it, one axis at a time (no atomics).
Tensor avg_backward(int mode, const PoolGeom& g, const Tensor& gy) {
  DeviceImpl& dev = dev_of(gy);
  Enter guard(dev, "pool2d_backward");  // one entry for the allocations and the passes
  const Tensor t = alloc(dev, {g.N, g.C, g.OH, g.W}, DType::f32, "pool2d_backward");
  axis_pass("pool2d_backward", Pass::grad, mode, g.o.count_include_pad, 3, axis_geom(g, 1), t, gy);
  const Tensor gx = alloc(dev, {g.N, g.C, g.H, g.W}, DType::f32, "pool2d_backward");
  axis_pass("pool2d_backward", Pass::grad, mode, g.o.count_include_pad, 2, axis_geom(g, 0), gx, t);
  return gx;
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
  // One invocation per output where its window's loops fit the device, else two passes of one
  // axis each (and dispatches of parts of windows longer still).
  const std::uint64_t limit = dev.loop_limit();
  if (y.numel() > 0 && (limit == 0 || direct_loops(mode, false, g) <= limit)) {
    launch_pool(mode, false, g, y, x, idx);
  } else if (y.numel() > 0) {
    const Tensor y32 = od == DType::f32 ? y : alloc(dev, y.shape(), DType::f32, op);
    pool_separable(mode, g, x, y32, idx);
    y = y32.to(od);
  }
  if (autograd::any_requires_grad({&x})) {
    autograd::record(
        y, {x},
        [g, mode, idx](const Tensor& gy) {
          if (gy.numel() == 0 || x_empty(g)) return std::vector<Tensor>{zeros(gy.device(), {g.N, g.C, g.H, g.W})};
          const Tensor gy32 = gy.to(DType::f32);
          if (mode != kMax) return std::vector<Tensor>{avg_backward(mode, g, gy32)};
          Tensor gx = zeros(gy.device(), {g.N, g.C, g.H, g.W});
          launch_pool(mode, true, g, gx, gy32.contiguous(), idx);
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
