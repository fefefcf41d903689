#include "ops/elementwise.hpp"

#include <algorithm>

#include "ops/elementwise_plan.hpp"
#include "runtime/error_flags.hpp"
#include "runtime/launch.hpp"
#include "runtime/settings.hpp"

namespace gltensor::detail {

const char* kernel_file(ElementwiseKernel k) {
  switch (k) {
    case ElementwiseKernel::unary:
      return "unary.comp";
    case ElementwiseKernel::binary:
      return "binary.comp";
    case ElementwiseKernel::ternary:
      return "ternary.comp";
    case ElementwiseKernel::fused:
      return "fused_elementwise.comp";
  }
  return "";
}

void launch_elementwise(const Elementwise& e, const Tensor& out, std::vector<Tensor> inputs) {
  DeviceImpl& dev = dev_of(out);
  Launch launch(dev, e.op);
  const Shape& shape = out.shape();
  const std::int64_t n = out.numel();
  for (std::int64_t d = 0; d < out.dim(); ++d)
    if (out.strides()[d] == 0 && shape[d] > 1)
      throw ValueError(std::string("gltensor::") + e.op + ": the output " + out.repr() +
                       " has more than one element referring to the same memory location (expanded view)");
  for (auto& in : inputs) {
    if (in.shape() != shape) in = in.expand(shape);
    if (in.shares_storage(out) && may_overlap(in, out) && !same_view(in, out)) in = in.clone();
  }
  if (n == 0) return;

  // Collapse dims: drop size-1 dims, merge neighbours that are contiguous in every operand.
  std::vector<const Tensor*> ops{&out};
  for (auto& in : inputs) ops.push_back(&in);
  const int nops = static_cast<int>(ops.size());
  Shape sizes = shape;
  std::vector<Shape> strides;
  for (int j = 0; j < nops; ++j) strides.push_back(ops[j]->strides());
  merge_dims(sizes, strides, 1);
  const int ndim = static_cast<int>(sizes.size());
  bool contig = ndim == 1;
  for (int j = 0; j < nops && contig; ++j) contig = strides[j][0] == 1 || sizes[0] == 1;

  ElementwiseProblem problem;
  problem.f16_fn = e.f16_fn, problem.in_ct = e.in_ct, problem.error_flag = e.error_flag != 0;
  problem.f16_math = dev.f16_math(), problem.contig = contig, problem.out_contiguous = out.is_contiguous();
  problem.numel = n, problem.scalar = e.scalar, problem.alpha = e.alpha, problem.quads = settings().elementwise_quads;
  for (int j = 0; j < nops; ++j) problem.operands.push_back({ops[j]->dtype(), ops[j]->offset()});
  ElementwisePlan plan = plan_elementwise(problem);
  auto plan_loops = [&] {
    return plan.vec4 ? elementwise_loops(ndim, nops, e.fn_loop, plan.quads)
                     : elementwise_element_loops(plan, out.dtype(), contig, ndim, nops, e.fn_loop);
  };
  // Past a (lowered) loop limit, one element per invocation: more invocations, fewer trips each
  // (relu's VEC4 form ran 14 under a limit of 9, cnn28). Past it even so: Launch's LimitError.
  if (dev.loop_limit() != 0 && plan_loops() > dev.loop_limit() && (plan.vec4 || plan.words)) {
    problem.one_element = true;
    plan = plan_elementwise(problem);
  }
  const bool words = plan.words, vec4 = plan.vec4, f16v = !plan.f16_fn.empty();

  ElementwiseVariant v;
  v.kernel = e.kernel, v.fn = e.fn, v.f16_fn = plan.f16_fn, v.ndim = ndim, v.contig = contig, v.words = words;
  v.vec4 = vec4, v.quads = plan.quads, v.error_flag = e.error_flag != 0, v.in_ct = e.in_ct;
  v.scalar = !e.scalar        ? ElementwiseVariant::Scalar::none
             : e.scalar_first ? ElementwiseVariant::Scalar::a
                              : ElementwiseVariant::Scalar::b;
  if (f16v) v.f16_ext = dev.f16_extension_glsl();
  v.nops = nops;
  for (int j = 0; j < nops; ++j) v.dtypes[static_cast<std::size_t>(j)] = ops[j]->dtype();
  launch.program(kernel_file(e.kernel), v.defines(), {kElementwiseLocal});
  ElementwiseParams params{e, plan.count, static_cast<std::uint64_t>(n), {sizes.begin(), sizes.end()}, {}, {}};
  for (int j = 0; j < nops; ++j) {
    for (int d = 0; d < ndim; ++d) params.strides.push_back(static_cast<std::uint32_t>(strides[j][d]));
    params.offsets.push_back(static_cast<std::uint32_t>(ops[j]->offset()));
  }
  for (int j = 0; j < nops; ++j) j == 0 ? launch.write(*ops[j]) : launch.read(*ops[j]);
  ErrorFlags* flags = e.error_flag ? &dev.extension<ErrorFlags>() : nullptr;
  if (flags) launch.bind(flags->storage(dev), true);  // binding NOPS
  launch.params(params).loop_iterations(plan_loops()).invocations(plan.invocations);
  if (flags) flags->expect(dev, e.op, e.error_flag);
}

}  // namespace gltensor::detail
