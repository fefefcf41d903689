// max/avg/adaptive pooling (pool.comp, pool_axis.comp) with explicit backward.
#include <algorithm>
#include <cmath>

#include "gltensor/autograd.hpp"
#include "gltensor/nn_functional.hpp"
#include "gltensor/ops.hpp"
#include "gltensor/reduce.hpp"
#include "nn/pool_plan.hpp"
#include "runtime/launch.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {
using namespace detail;

namespace {

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

// pool.comp: the forward of every mode, max's backward.
// gather: max's backward over disjoint windows, one invocation per input element, or per window
// where the windows tile the input (GATHER_TILES: the CNN's 2 x 2 pooling; measured on the H100,
// bench/RESULTS.md, 2026-11-27, cnn29).
void launch_pool(PoolMode mode, bool backward, const PoolGeom& g, const Tensor& out, const Tensor& in,
                 const Tensor& idx, bool gather = false) {
  DeviceImpl& dev = dev_of(out);
  Launch launch(dev, backward ? "pool2d_backward" : "pool2d");
  PoolVariant v;
  v.mode = mode, v.backward = backward, v.count_pad = g.o.count_include_pad, v.out = out.dtype(), v.in = in.dtype();
  v.gather = gather, v.tiles = gather && pool_windows_tile(g, dev.loop_limit());
  launch.program(v.kFile, v.defines(), {256}).write(out).read(in);
  if (mode == PoolMode::max) launch.bind(*idx.impl()->storage, !backward);
  const std::int64_t n = gather && !v.tiles ? g.N * g.C * g.H * g.W : g.N * g.C * g.OH * g.OW;
  launch.params(PoolParams{g, backward ? nullptr : &in, n})
      .loop_iterations(v.tiles ? pool_tiles_loops(g) : pool_direct_loops(mode, backward, g))
      .invocations(static_cast<std::uint64_t>(n));
}

// Uniforms of glsl/nn/pool_axis.comp.
struct AxisParams {
  const Tensor &out, &in;
  const PoolAxis& a;
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

// One pass of pool_axis.comp along `axis` (2 = H, 3 = W): `out` (f32, contiguous) from `in`, in
// the planned dispatches (each over a range of the window's offsets, adding to or comparing with
// what the one before wrote). Max: indices to idx_out, with idx_in the W pass's column indices
// (the H pass: flat h * W + w).
void axis_pass(const char* op, PoolPass pass, PoolMode mode, bool count_pad, int axis, const PoolAxis& a,
               const std::vector<PoolPassDispatch>& dispatches, const Tensor& out, const Tensor& in,
               const Tensor& idx_out = Tensor(), const Tensor& idx_in = Tensor(), std::int64_t W = 0) {
  DeviceImpl& dev = dev_of(out);
  PoolAxisVariant v;
  v.pass = pass, v.axis = axis, v.adaptive = mode == PoolMode::adaptive;
  v.count_pad = count_pad && mode == PoolMode::avg, v.row_index = idx_in.defined(), v.in = in.dtype();
  for (const PoolPassDispatch& d : dispatches) {
    Launch launch(dev, op);
    launch.program(v.kFile, v.defines(), {256}).write(out).read(in);
    if (pass == PoolPass::max) launch.write(idx_out);
    if (idx_in.defined()) launch.read(idx_in);
    launch.params(AxisParams{out, in, a, d.j0, d.j1, d.j0 > 0, &d == &dispatches.back(), W})
        .loop_iterations(d.loop_iterations)
        .invocations(static_cast<std::uint64_t>(out.numel()));
  }
}

// The forward in two passes (W, then H) into y32 (f32) and, for max, idx.
void pool_separable(PoolMode mode, const PoolGeom& g, const Pool2dPlan& plan, const Tensor& x, const Tensor& y32,
                    const Tensor& idx) {
  DeviceImpl& dev = dev_of(x);
  const PoolAxis ah = pool_axis(g, 0), aw = pool_axis(g, 1);
  const Tensor t = alloc(dev, {g.N, g.C, g.H, g.OW}, DType::f32, "pool2d");
  if (mode == PoolMode::max) {
    const Tensor cols = alloc(dev, t.shape(), DType::i32, "pool2d");
    axis_pass("pool2d", PoolPass::max, mode, false, 3, aw, plan.w_pass, t, x, cols);
    axis_pass("pool2d", PoolPass::max, mode, false, 2, ah, plan.h_pass, y32, t, idx, cols, g.W);
  } else {
    axis_pass("pool2d", PoolPass::sum, mode, g.o.count_include_pad, 3, aw, plan.w_pass, t, x);
    axis_pass("pool2d", PoolPass::sum, mode, g.o.count_include_pad, 2, ah, plan.h_pass, y32, t);
  }
}

// The avg gradient (f32 [N, C, H, W]) of gy (f32 [N, C, OH, OW]): each input position gathers
// the windows covering it, one axis at a time (no atomics).
Tensor avg_backward(PoolMode mode, const PoolGeom& g, const Tensor& gy) {
  DeviceImpl& dev = dev_of(gy);
  Enter guard(dev, "pool2d_backward");  // one entry for the allocations and the passes
  const std::uint64_t limit = dev.loop_limit();
  const PoolAxis ah = pool_axis(g, 0), aw = pool_axis(g, 1);
  const Tensor t = alloc(dev, {g.N, g.C, g.OH, g.W}, DType::f32, "pool2d_backward");
  axis_pass("pool2d_backward", PoolPass::grad, mode, g.o.count_include_pad, 3, aw,
            plan_pool_pass(PoolPass::grad, mode, aw, limit), t, gy);
  const Tensor gx = alloc(dev, {g.N, g.C, g.H, g.W}, DType::f32, "pool2d_backward");
  axis_pass("pool2d_backward", PoolPass::grad, mode, g.o.count_include_pad, 2, ah,
            plan_pool_pass(PoolPass::grad, mode, ah, limit), gx, t);
  return gx;
}

Tensor pool(const char* op, PoolMode mode, const Tensor& x, PoolGeom g) {
  check_defined(op, x);
  if (x.dim() != 4)
    throw ShapeError(std::string("gltensor::") + op + ": expects [N, C, H, W], got " + to_string(x.shape()));
  DeviceImpl& dev = dev_of(x);
  Enter guard(dev, op);  // one entry for the forward's allocations and launch
  g.N = x.size(0), g.C = x.size(1), g.H = x.size(2), g.W = x.size(3);
  if (mode != PoolMode::adaptive) {
    const std::array<std::int64_t, 2> out = pool2d_out_hw(op, x.shape(), g.o);
    g.OH = out[0], g.OW = out[1];
  }
  const DType od = is_floating(x.dtype()) ? x.dtype() : DType::f32;
  Tensor y = alloc(dev, {g.N, g.C, g.OH, g.OW}, od, op);
  Tensor idx = mode == PoolMode::max ? alloc(dev, y.shape(), DType::i32, op) : Tensor();
  // One invocation per output where its window's loops fit the device, else two passes of one
  // axis each (and dispatches of parts of windows longer still).
  const Pool2dPlan plan = plan_pool2d(mode, g, dev.loop_limit());
  if (y.numel() > 0 && plan.path == Pool2dPlan::Path::direct) {
    launch_pool(mode, false, g, y, x, idx);
  } else if (y.numel() > 0) {
    const Tensor y32 = od == DType::f32 ? y : alloc(dev, y.shape(), DType::f32, op);
    pool_separable(mode, g, plan, x, y32, idx);
    y = y32.to(od);
  }
  if (autograd::any_requires_grad({&x})) {
    autograd::record(
        y, {x},
        [g, mode, idx](const Tensor& gy) {
          if (gy.numel() == 0 || x_empty(g)) return std::vector<Tensor>{zeros(gy.device(), {g.N, g.C, g.H, g.W})};
          const Tensor gy32 = gy.to(DType::f32);
          if (mode != PoolMode::max) return std::vector<Tensor>{avg_backward(mode, g, gy32)};
          const bool gather = pool_windows_disjoint(g);
          Tensor gx = gather ? alloc(dev_of(gy), {g.N, g.C, g.H, g.W}, DType::f32, "max_pool2d")
                             : zeros(gy.device(), {g.N, g.C, g.H, g.W});
          launch_pool(mode, true, g, gx, gy32.contiguous(), idx, gather);
          return std::vector<Tensor>{gx};
        },
        op);
  }
  return y;
}

}  // namespace

Tensor detail::max_pool2d_as(const char* op, const Tensor& x, const Pool2dOptions& o) {
  return pool(op, PoolMode::max, x, PoolGeom{0, 0, 0, 0, 0, 0, o});
}
Tensor detail::avg_pool2d_as(const char* op, const Tensor& x, const Pool2dOptions& o) {
  Pool2dOptions a = o;
  a.dilation = {1, 1};
  return pool(op, PoolMode::avg, x, PoolGeom{0, 0, 0, 0, 0, 0, a});
}
Tensor max_pool2d(const Tensor& x, const Pool2dOptions& o) { return detail::max_pool2d_as("max_pool2d", x, o); }
Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& o) { return detail::avg_pool2d_as("avg_pool2d", x, o); }
Tensor adaptive_avg_pool2d(const Tensor& x, std::array<std::int64_t, 2> os) {
  if (os[0] <= 0 || os[1] <= 0) throw ValueError("gltensor::adaptive_avg_pool2d: output size must be positive");
  Pool2dOptions o;
  o.count_include_pad = false;
  return pool("adaptive_avg_pool2d", PoolMode::adaptive, x, PoolGeom{0, 0, 0, 0, os[0], os[1], o});
}
Tensor global_avg_pool2d(const Tensor& x) {
  check_defined("global_avg_pool2d", x);
  if (x.dim() != 4) throw ShapeError("gltensor::global_avg_pool2d: expects [N, C, H, W], got " + to_string(x.shape()));
  return mean(x, {2, 3}, true);
}

}  // namespace gltensor
