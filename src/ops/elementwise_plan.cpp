// plan_elementwise (elementwise_plan.hpp).
#include "ops/elementwise_plan.hpp"

#include <algorithm>
#include <cmath>

#include "gltensor/dtype.hpp"

namespace gltensor::detail {

namespace {
// The value as the f32 path sees it (a float uniform) is an f16 value: rounding it to f16 (the
// f16 form's float16_t(u_scalar)) changes nothing. NaN is not (NaN != NaN): f32 math.
bool f16_exact(double v) {
  const float f = static_cast<float>(v);
  return f16_to_f32(f32_to_f16(f)) == f;
}
}  // namespace

ElementwisePlan plan_elementwise(const ElementwiseProblem& p) {
  ElementwisePlan plan;
  const DType od = p.operands.at(0).dtype;
  const int pw = per_word(od);
  plan.words = pw > 1 && p.out_contiguous && !p.one_element;
  // f16 math: ops with an f16 form over contiguous f16 operands (every one, the output
  // included: mixed dtypes keep f32 math), word-aligned, two elements at a time in f16vec2.
  if (p.f16_math && p.contig && p.numel % 2 == 0 && p.in_ct == CT::f32 && !p.error_flag) {
    int exp2 = 0;
    plan.f16_fn = p.f16_fn;
    for (const ElementwiseOperand& o : p.operands)
      if (o.dtype != DType::f16 || o.offset % 2 != 0) plan.f16_fn.clear();
    // A scalar operand or alpha is a value of another dtype (double, a float uniform): mixed
    // dtypes too, unless rounding it to f16 is exact.
    if (p.scalar && !f16_exact(*p.scalar)) plan.f16_fn.clear();
    // a + alpha * b rounds the product to f16 before the sum unless alpha * b is exact: alpha a
    // power of two (a + 3 b with a = -3 b would keep the product's rounding error whole; 1, every
    // other op's, is one).
    if (!(f16_exact(p.alpha) && std::fabs(std::frexp(p.alpha, &exp2)) == 0.5)) plan.f16_fn.clear();
  }
  plan.vec4 = p.contig && p.numel % 4 == 0 && itemsize(od) == 4 && !p.one_element;
  for (const ElementwiseOperand& o : p.operands)
    if (itemsize(o.dtype) != 4 || o.offset % 4 != 0) plan.vec4 = false;

  const auto n = static_cast<std::uint64_t>(p.numel);
  if (plan.vec4) {
    plan.count = n / 4;
    plan.quads = p.quads > 0 ? p.quads : kElementwiseQuads;
    const std::uint64_t block = static_cast<std::uint64_t>(kElementwiseLocal) * plan.quads;
    plan.invocations = (plan.count + block - 1) / block * kElementwiseLocal;
    return plan;
  }
  if (!plan.f16_fn.empty()) {
    // One word (two elements) of every operand per invocation: numel / 2 words. (Not also the
    // OUT_WORDS count below: that halved the grid again and left the second half of the output
    // unwritten.)
    plan.count = n / 2;
  } else if (plan.words) {
    const auto off = static_cast<std::uint64_t>(p.operands[0].offset);
    plan.count = (off + n + pw - 1) / pw - off / pw;
  } else {
    plan.count = n;
  }
  plan.invocations = plan.count;
  return plan;
}

std::uint64_t elementwise_element_loops(const ElementwisePlan& plan, DType out, bool contig, int ndim, int nops,
                                        std::uint32_t fn_loop) {
  const auto n = static_cast<std::uint64_t>(nops), d = static_cast<std::uint64_t>(ndim);
  if (!plan.f16_fn.empty()) return n + 2 + fn_loop;
  const std::uint64_t element = (contig ? 2 * n : n + d * (1 + n)) + fn_loop;
  if (plan.words) {
    const auto pw = static_cast<std::uint64_t>(per_word(out));
    return pw * (1 + element);
  }
  return element;
}

}  // namespace gltensor::detail
