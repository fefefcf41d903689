// Squeeze-and-excitation in one dispatch (squeeze_excite.hpp): plan, Variant and launch of
// glsl/nn/squeeze_excite.comp.
#include "nn/squeeze_excite.hpp"

#include <algorithm>
#include <array>

#include "gltensor/errors.hpp"
#include "ops/activation.hpp"
#include "runtime/int_math.hpp"
#include "runtime/launch.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor::detail {

namespace {

// Lanes for R rows of K: about one round of rows, at least 8 lanes (a row's 32 bytes a load), at
// most K's power of two above (no lane without elements) and the workgroup.
std::uint32_t lanes_for(std::int64_t R, std::int64_t K, std::int64_t local) {
  std::int64_t l = 1;
  while (l * 2 * R <= local) l *= 2;
  l = std::max<std::int64_t>(l, 8);
  std::int64_t kmax = 1;
  while (kmax < K) kmax *= 2;
  return static_cast<std::uint32_t>(std::clamp<std::int64_t>(std::min(l, kmax), 1, local));
}

// Loop trips of one invocation in a row sum (squeeze_excite.comp: rows_sum), exit tests counted.
std::uint64_t row_sum_loops(std::int64_t R, std::int64_t K, std::uint32_t L, std::int64_t local) {
  const std::uint64_t rounds = ceil_div(static_cast<std::uint64_t>(R), static_cast<std::uint64_t>(local) / L);
  // (4 elements a trip, then a tail of at most 3)
  return rounds + 1 + rounds * (ceil_div(static_cast<std::uint64_t>(K), 4 * std::uint64_t{L}) + 1 + 3 + 1 + L + 1);
}

struct SqueezeExciteParams {
  std::int64_t N, C, Cr, hw;
  const SqueezeExcitePlan& plan;
  const Epilogue &act1, &act2;
  void set(Uniforms& u) const {
    u.u32("u_n", N);
    u.u32("u_c", C);
    u.u32("u_cr", Cr);
    u.u32("u_hw", hw);
    u.u32s("u_lanes", plan.lanes);
    // the kernel's codes: Activation's order (act_by_code)
    u.u32s("u_act", {static_cast<std::int64_t>(act1.act), static_cast<std::int64_t>(act2.act)});
    const std::array<float, 4> p{act1.p0, act1.p1, act2.p0, act2.p1};
    u.f32s("u_p", p);
  }
};

}  // namespace

SqueezeExcitePlan plan_squeeze_excite(std::int64_t C, std::int64_t Cr, std::int64_t hw, bool quads,
                                      std::int64_t max_local, std::uint64_t loop_budget) {
  SqueezeExcitePlan p;
  p.local = 1;
  while (p.local * 2 <= std::min(max_local, kSqueezeExciteMaxLocal)) p.local *= 2;
  p.quads = quads && hw % 4 == 0;
  const std::int64_t M = kSqueezeExciteMaxChannels;
  if (C < 1 || Cr < 1 || hw < 1) {
    p.why = "C " + std::to_string(C) + ", Cr " + std::to_string(Cr) + ", H W " + std::to_string(hw) + ": empty";
    return p;
  }
  if (C > M || Cr > M) {
    p.why = "C " + std::to_string(C) + ", Cr " + std::to_string(Cr) + " > " + std::to_string(M) + " (shared memory)";
    return p;
  }
  if (C * hw > kSqueezeExciteMaxElements) {
    p.why = "C H W " + std::to_string(C * hw) + " > " + std::to_string(kSqueezeExciteMaxElements) +
            " per image (one workgroup)";
    return p;
  }
  const std::int64_t hwk = p.quads ? hw / 4 : hw, L = p.local;  // x's rows in loads
  p.lanes[0] = lanes_for(C, hwk, L), p.lanes[1] = lanes_for(Cr, C, L), p.lanes[2] = lanes_for(C, Cr, L);
  p.loop_iterations = row_sum_loops(C, hwk, p.lanes[0], L) + row_sum_loops(Cr, C, p.lanes[1], L) +
                      row_sum_loops(C, Cr, p.lanes[2], L) +
                      ceil_div(static_cast<std::uint64_t>(C * hwk), 4 * static_cast<std::uint64_t>(L)) + 1 + 3 + 1;
  if (p.loop_iterations > loop_budget) {
    p.why = std::to_string(p.loop_iterations) + " loop iterations per invocation > the device's " +
            std::to_string(loop_budget);
    return p;
  }
  p.ok = true;
  return p;
}

SqueezeExcitePlan plan_squeeze_excite(const Tensor& x, std::int64_t Cr) {
  const DeviceImpl& dev = dev_of(x);
  const Capabilities& c = dev.caps();
  const std::int64_t hw = x.dim() == 4 ? x.size(2) * x.size(3) : 0;
  // (x read in place where it is contiguous at offset 0, else a contiguous copy: either way quads)
  return plan_squeeze_excite(x.dim() == 4 ? x.size(1) : 0, Cr, hw, true,
                             std::min(c.max_workgroup_invocations, c.max_workgroup_size[0]), dev.loop_budget());
}

Defines SqueezeExciteVariant::defines() const {
  Defines d;
  d.flag("QUADS", quads);
  d.uvalue("MAX_C", static_cast<std::uint64_t>(kSqueezeExciteMaxChannels));
  d.operand(0, DType::f32, CT::f32, true);
  for (int i = 1; i <= 5; ++i) d.operand(i, DType::f32, CT::f32, false);
  return d;
}

Tensor squeeze_excite(const char* op, const Tensor& x, const Tensor& w1, const Tensor& b1, const Epilogue& act1,
                      const Tensor& w2, const Tensor& b2, const Epilogue& act2) {
  const std::string name = std::string("gltensor::") + op;
  for (const Tensor* t : {&x, &w1, &b1, &w2, &b2})
    if (t->dtype() != DType::f32) throw DTypeError(name + ": tensors must be float32, got " + dtype_name(t->dtype()));
  check_epilogue_act_only(op, act1);
  check_epilogue_act_only(op, act2);
  check_epilogue(op, act1);
  check_epilogue(op, act2);
  // [O, I] or [O, I, 1, 1]
  auto fc = [](const Tensor& w, std::int64_t& O, std::int64_t& I) {
    if (w.dim() != 2 && !(w.dim() == 4 && w.size(2) == 1 && w.size(3) == 1)) return false;
    O = w.size(0), I = w.size(1);
    return true;
  };
  std::int64_t Cr = 0, C1 = 0, C2 = 0, Cr2 = 0;
  if (x.dim() != 4 || !fc(w1, Cr, C1) || !fc(w2, C2, Cr2) || C1 != x.size(1) || C2 != x.size(1) || Cr2 != Cr ||
      b1.dim() != 1 || b1.size(0) != Cr || b2.dim() != 1 || b2.size(0) != C2)
    throw ShapeError(name + ": x " + to_string(x.shape()) + " (N, C, H, W), w1 " + to_string(w1.shape()) +
                     " (Cr, C), b1 " + to_string(b1.shape()) + " (Cr), w2 " + to_string(w2.shape()) + " (C, Cr), b2 " +
                     to_string(b2.shape()) + " (C) do not fit");
  DeviceImpl& dev = dev_of(x);
  const std::int64_t N = x.size(0), C = x.size(1), hw = x.size(2) * x.size(3);
  Tensor y = alloc(dev, x.shape(), DType::f32, op);
  if (N == 0 || hw == 0) return y;
  const SqueezeExcitePlan plan = plan_squeeze_excite(x, Cr);
  if (!plan.ok) throw LimitError(name + ": x " + to_string(x.shape()) + ", Cr " + std::to_string(Cr) + ": " + plan.why);
  auto dense = [](const Tensor& t) { return t.is_contiguous() && t.offset() == 0 ? t : t.contiguous(); };
  const Tensor xd = dense(x), w1d = dense(w1), b1d = dense(b1), w2d = dense(w2), b2d = dense(b2);
  SqueezeExciteVariant v;
  v.quads = plan.quads;
  Launch launch(dev, op);
  launch.program(v.kFile, v.defines(), {static_cast<std::uint32_t>(plan.local)})
      .write(y)
      .read(xd)
      .read(w1d)
      .read(b1d)
      .read(w2d)
      .read(b2d);
  launch.params(SqueezeExciteParams{N, C, Cr, hw, plan, act1, act2}).loop_iterations(plan.loop_iterations);
  launch.groups_1d(static_cast<std::uint64_t>(N));
  return y;
}

}  // namespace gltensor::detail
