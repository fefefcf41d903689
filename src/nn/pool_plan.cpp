// plan_pool2d and plan_pool_pass (pool_plan.hpp).
#include "nn/pool_plan.hpp"

#include <algorithm>

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

}  // namespace gltensor::detail
