#include "ops/elementwise.hpp"

#include <algorithm>
#include <cmath>

#include "ops/elementwise_plan.hpp"
#include "runtime/error_flags.hpp"
#include "runtime/launch.hpp"

namespace gltensor::detail {

namespace {
// Uniforms of glsl/common/elementwise.glsl and the family's own (unary/binary/ternary.comp).
struct ElementwiseParams {
  const Elementwise& e;
  std::uint64_t count, numel;
  std::vector<std::uint32_t> shape, strides, offsets;
  void set(Uniforms& u) const {
    u.u32("u_count", static_cast<std::int64_t>(count));
    u.u32("u_numel", static_cast<std::int64_t>(numel));
    u.u32s("u_shape", shape);
    u.u32s("u_strides", strides);
    u.u32s("u_offset", offsets);
    if (e.kernel == ElementwiseKernel::unary) {
      u.f32("u_p0", e.p0);
      u.f32("u_p1", e.p1);
      u.i32("u_i0", e.i0);
      u.u32s("u_words", e.words);
    } else if (e.kernel == ElementwiseKernel::binary) {
      u.f32("u_alpha", e.alpha);
      if (e.scalar) {
        const double s = *e.scalar;
        u.f32("u_scalar", s);
        // The int form is read only for integral scalars (SCALAR_INT): Inf, NaN or 1e10 next to
        // a float tensor do not set it.
        if (std::isfinite(s) && std::fabs(s) <= 2147483647.0) u.i32("u_iscalar", static_cast<std::int64_t>(s));
      }
    } else {
      u.f32("u_p0", e.p0);
    }
  }
};

}  // namespace

const char* kernel_file(ElementwiseKernel k) {
  return k == ElementwiseKernel::unary ? "unary.comp" : k == ElementwiseKernel::binary ? "binary.comp" : "ternary.comp";
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
  problem.numel = n, problem.scalar = e.scalar, problem.alpha = e.alpha;
  for (int j = 0; j < nops; ++j) problem.operands.push_back({ops[j]->dtype(), ops[j]->offset()});
  const ElementwisePlan plan = plan_elementwise(problem);
  const bool words = plan.words, vec4 = plan.vec4, f16v = !plan.f16_fn.empty();

  ElementwiseVariant v;
  v.kernel = e.kernel, v.fn = e.fn, v.f16_fn = plan.f16_fn, v.ndim = ndim, v.contig = contig, v.words = words;
  v.vec4 = vec4, v.error_flag = e.error_flag != 0, v.in_ct = e.in_ct;
  v.scalar = !e.scalar        ? ElementwiseVariant::Scalar::none
             : e.scalar_first ? ElementwiseVariant::Scalar::a
                              : ElementwiseVariant::Scalar::b;
  if (f16v) v.f16_ext = dev.f16_extension_glsl();
  v.nops = nops;
  for (int j = 0; j < nops; ++j) v.dtypes[static_cast<std::size_t>(j)] = ops[j]->dtype();
  launch.program(kernel_file(e.kernel), v.defines(), {256});
  const std::uint64_t count = plan.invocations;
  ElementwiseParams params{e, count, static_cast<std::uint64_t>(n), {sizes.begin(), sizes.end()}, {}, {}};
  for (int j = 0; j < nops; ++j) {
    for (int d = 0; d < ndim; ++d) params.strides.push_back(static_cast<std::uint32_t>(strides[j][d]));
    params.offsets.push_back(static_cast<std::uint32_t>(ops[j]->offset()));
  }
  for (int j = 0; j < nops; ++j) j == 0 ? launch.write(*ops[j]) : launch.read(*ops[j]);
  ErrorFlags* flags = e.error_flag ? &dev.extension<ErrorFlags>() : nullptr;
  if (flags) launch.bind(flags->storage(dev), true);  // binding NOPS
  // Loops: operand offsets (NDIM x NOPS), a word's elements or a quad's lanes (4 x NOPS), OP's own
  // loop for each of a word's or quad's elements.
  const std::uint64_t loops = static_cast<std::uint64_t>(ndim * nops + 4 * nops + 4) + 4ull * e.fn_loop;
  launch.params(params).loop_iterations(loops).invocations(count);
  if (flags) flags->expect(dev, e.op, e.error_flag);
}

}  // namespace gltensor::detail
