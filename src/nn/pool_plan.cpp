// plan_pool2d and plan_pool_pass (pool_plan.hpp).
#include "nn/pool_plan.hpp"

#include <algorithm>

#include "gltensor/errors.hpp"

namespace gltensor::detail {

namespace {
// Longest window along one axis: the kernel, or an adaptive window ceil(I / O) + 1.
std::int64_t window_extent(PoolMode mode, std::int64_t in, std::int64_t out, std::int64_t k) {
  return mode == PoolMode::adaptive ? (in + out - 1) / out + 1 : k;
}

// Longest loop of a pass: a window's offsets, or the windows covering one input position.
std::int64_t pass_extent(PoolPass pass, PoolMode mode, const PoolAxis& a) {
  if (pass == PoolPass::grad) return mode == PoolMode::adaptive ? (a.O + a.I - 1) / a.I + 2 : (a.k + a.s - 1) / a.s + 1;
  return mode == PoolMode::adaptive ? (a.I + a.O - 1) / a.O + 1 : a.k;
}
}  // namespace

std::int64_t window_out_size(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t p_begin, std::int64_t p_end,
                             std::int64_t d, bool ceil_mode) {
  const std::int64_t num = in + p_begin + p_end - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  std::int64_t o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;  // floor division
  if (ceil_mode && o > 0 && (o - 1) * s >= in + p_begin) --o;
  return o;
}

std::array<std::int64_t, 2> pool2d_out_hw(const std::string& op, const Shape& x, Pool2dOptions& o) {
  const std::string what = "gltensor::" + op + ": ";
  for (int d = 0; d < 2; ++d) {
    if (o.stride[d] == 0) o.stride[d] = o.kernel[d];
    if (o.kernel[d] <= 0 || o.stride[d] <= 0 || o.dilation[d] <= 0 || o.padding[d] < 0)
      throw ValueError(what + "kernel, stride and dilation must be positive, padding >= 0");
    // PyTorch's rule (pooling_output_shape): padding at most half the effective kernel size, so
    // that every window holds an input element.
    const std::int64_t eff = (o.kernel[d] - 1) * o.dilation[d] + 1;
    if (o.padding[d] > eff / 2)
      throw ValueError(what + "padding " + to_string({o.padding[0], o.padding[1]}) +
                       " must be at most half the effective kernel size (kernel - 1) * dilation + 1 = " +
                       to_string({(o.kernel[0] - 1) * o.dilation[0] + 1, (o.kernel[1] - 1) * o.dilation[1] + 1}) +
                       " (kernel " + to_string({o.kernel[0], o.kernel[1]}) + ", dilation " +
                       to_string({o.dilation[0], o.dilation[1]}) + "), input " + to_string(x));
  }
  std::array<std::int64_t, 2> out{};
  for (int d = 0; d < 2; ++d)
    out[d] =
        window_out_size(x[2 + d], o.kernel[d], o.stride[d], o.padding[d], o.padding[d], o.dilation[d], o.ceil_mode);
  if (out[0] <= 0 || out[1] <= 0)
    throw ShapeError(what + "input " + to_string(x) + " is too small for kernel " +
                     to_string({o.kernel[0], o.kernel[1]}) + " (stride " + to_string({o.stride[0], o.stride[1]}) +
                     ", padding " + to_string({o.padding[0], o.padding[1]}) + ", dilation " +
                     to_string({o.dilation[0], o.dilation[1]}) + (o.ceil_mode ? ", ceil_mode" : "") +
                     "): the output size would be " + to_string({out[0], out[1]}));
  return out;
}

PoolAxis pool_axis(const PoolGeom& g, int axis) {
  return {axis ? g.W : g.H, axis ? g.OW : g.OH, g.o.kernel[axis],
          g.o.stride[axis], g.o.padding[axis],  g.o.dilation[axis]};
}

std::uint64_t pool_direct_loops(PoolMode mode, bool backward, const PoolGeom& g) {
  if (backward) return 1;
  const std::int64_t kh = window_extent(mode, g.H, g.OH, g.o.kernel[0]);
  const std::int64_t kw = window_extent(mode, g.W, g.OW, g.o.kernel[1]);
  return static_cast<std::uint64_t>(kh * (kw + 2) + 1);
}

bool pool_windows_disjoint(const PoolGeom& g) {
  return g.o.stride[0] >= g.o.dilation[0] * (g.o.kernel[0] - 1) + 1 &&
         g.o.stride[1] >= g.o.dilation[1] * (g.o.kernel[1] - 1) + 1;
}

std::uint64_t pool_tiles_loops(const PoolGeom& g) {
  return static_cast<std::uint64_t>(g.o.kernel[0] * (g.o.kernel[1] + 1));
}

bool pool_windows_tile(const PoolGeom& g, std::uint64_t loop_limit) {
  for (int d = 0; d < 2; ++d) {
    const std::int64_t k = g.o.kernel[d];
    if (g.o.stride[d] != k || g.o.padding[d] != 0 || (k > 1 && g.o.dilation[d] != 1)) return false;
  }
  return g.H == g.OH * g.o.kernel[0] && g.W == g.OW * g.o.kernel[1] &&
         (loop_limit == 0 || pool_tiles_loops(g) <= loop_limit);
}

std::vector<PoolPassDispatch> plan_pool_pass(PoolPass pass, PoolMode mode, const PoolAxis& a,
                                             std::uint64_t loop_limit) {
  const std::int64_t extent = pass_extent(pass, mode, a);
  // Loops of a dispatch: its offsets and the exit test.
  const std::int64_t chunk =
      loop_limit == 0 ? extent : std::max<std::int64_t>(1, static_cast<std::int64_t>(loop_limit) - 2);
  std::vector<PoolPassDispatch> out;
  for (std::int64_t j0 = 0; j0 < extent; j0 += chunk) {
    const std::int64_t j1 = std::min(extent, j0 + chunk);
    out.push_back({j0, j1, static_cast<std::uint64_t>(j1 - j0 + 1)});
  }
  return out;
}

Pool2dPlan plan_pool2d(PoolMode mode, const PoolGeom& g, std::uint64_t loop_limit) {
  Pool2dPlan plan;
  plan.loop_iterations = pool_direct_loops(mode, false, g);
  if (loop_limit == 0 || plan.loop_iterations <= loop_limit) return plan;
  plan.path = Pool2dPlan::Path::separable;
  const PoolPass pass = mode == PoolMode::max ? PoolPass::max : PoolPass::sum;
  plan.w_pass = plan_pool_pass(pass, mode, pool_axis(g, 1), loop_limit);
  plan.h_pass = plan_pool_pass(pass, mode, pool_axis(g, 0), loop_limit);
  return plan;
}

Defines PoolVariant::defines() const {
  static const char* names[] = {"pool_max", "pool_avg", "pool_adaptive"};
  Defines d;
  d.ident("POOL", names[static_cast<int>(mode)]).flag("BACKWARD", backward).flag("COUNT_PAD", count_pad);
  d.flag("GATHER", gather).flag("GATHER_TILES", gather && tiles);
  d.operand(0, out, CT::f32, true).operand(1, in, CT::f32, false);
  if (mode == PoolMode::max) d.operand(2, DType::i32, CT::i32, !backward);
  return d;
}

std::vector<PoolVariant> PoolVariant::space() {
  std::vector<PoolVariant> out;
  for (PoolMode mode : {PoolMode::max, PoolMode::avg, PoolMode::adaptive})
    for (int f = 0; f < 4; ++f)
      for (DType dt : {DType::f32, DType::f16}) {
        PoolVariant v;
        v.mode = mode, v.backward = f & 1, v.count_pad = f & 2, v.out = v.in = dt;
        if (v.backward && mode != PoolMode::max) continue;
        out.push_back(v);
        if (v.backward) {
          v.gather = true;
          out.push_back(v);
          v.tiles = true;
          out.push_back(v);
        }
      }
  return out;
}

Defines PoolAxisVariant::defines() const {
  static const char* names[] = {"pass_sum", "pass_max", "pass_grad"};
  Defines d;
  d.ident("PASS", names[static_cast<int>(pass)]).value("AXIS", axis);
  d.flag("ADAPTIVE", adaptive).flag("COUNT_PAD", count_pad).flag("ROW_INDEX", row_index);
  d.operand(0, DType::f32, CT::f32, true).operand(1, in, CT::f32, false);
  if (pass == PoolPass::max) d.operand(2, DType::i32, CT::i32, true);
  if (row_index) d.operand(3, DType::i32, CT::i32, false);
  return d;
}

std::vector<PoolAxisVariant> PoolAxisVariant::space() {
  std::vector<PoolAxisVariant> out;
  for (PoolPass pass : {PoolPass::sum, PoolPass::max, PoolPass::grad})
    for (int axis : {2, 3})
      for (int f = 0; f < 8; ++f)
        for (DType dt : {DType::f32, DType::f16}) {
          PoolAxisVariant v;
          v.pass = pass, v.axis = axis, v.adaptive = f & 1, v.count_pad = f & 2, v.row_index = f & 4, v.in = dt;
          if (v.adaptive && v.count_pad) continue;
          out.push_back(v);
        }
  return out;
}

}  // namespace gltensor::detail
