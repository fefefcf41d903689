// matmul / gemm / linear on the matmul kernels (glsl/ops/matmul_*.comp; GEMV: gemv.comp).
#include <algorithm>
#include <string>

#include "gltensor/autograd.hpp"
#include "gltensor/linalg.hpp"
#include "gltensor/ops.hpp"
#include "gltensor/reduce.hpp"
#include "ops/activation.hpp"
#include "ops/autocast.hpp"
#include "ops/batched.hpp"
#include "ops/elementwise_grads.hpp"
#include "ops/matmul_launch.hpp"
#include "runtime/codegen.hpp"
#include "runtime/launch.hpp"
#include "runtime/tuner.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {
using namespace detail;

namespace {
Tensor matmul_kernel(const Tensor& a, const Tensor& b, const Tensor& addend, double alpha, double beta,
                     const Epilogue& epilogue, std::int64_t split = 0, Tensor* rowsum = nullptr,
                     const Tensor* mask = nullptr, bool transpose_out = false, const Tensor* residual = nullptr);
}  // namespace

Tensor matmul_fused(const Tensor& a, const Tensor& b, const Tensor& addend, double alpha, double beta,
                    const Epilogue& epilogue) {
  check_epilogue("matmul", epilogue);
  // A contiguous batched a against a 2-D b (linear layers over [batch, tokens, features]): one
  // GEMM over the folded rows, whose weight gradient is one GEMM over them too, instead of a GEMM
  // per batch entry and a sum of their [K, N] results (chargpt's training step, bench/RESULTS.md).
  if (a.dim() > 2 && b.dim() == 2 && a.is_contiguous() && a.numel() > 0 && a.size(-1) == b.size(0)) {
    Shape out_shape = a.shape();
    out_shape.back() = b.size(1);
    const std::int64_t rows = a.numel() / a.size(-1);
    const bool full_addend = addend.defined() && addend.shape() == out_shape && addend.is_contiguous();
    if (!addend.defined() || addend.dim() <= 1 || full_addend) {
      const Tensor d = full_addend ? addend.view({rows, b.size(1)}) : addend;
      return matmul_fused(a.view({rows, a.size(-1)}), b, d, alpha, beta, epilogue).view(out_shape);
    }
  }
  if (!autograd::any_requires_grad({&a, &b, &addend})) return matmul_kernel(a, b, addend, alpha, beta, epilogue);
  // With gradients: the matmul (+ addend) records its node; the activation (and scale / shift)
  // records its own, but a plain ReLU: its gradient needs only the output's sign (y > 0 exactly
  // where the pre-activation is), so the kernel applies it in its epilogue and the node masks g
  // first (one dispatch less).
  const bool relu = epilogue.act == Activation::relu && !epilogue.affine();
  if (!epilogue.none() && !relu) return apply_epilogue(matmul_fused(a, b, addend, alpha, beta, Epilogue()), epilogue);
  Tensor y = matmul_kernel(a, b, addend, alpha, beta, epilogue);
  const Tensor yd = relu ? detach(y) : Tensor();
  // Only the gradients some input needs (a layer's input batch needs none).
  const bool need_a = requires_grad(a), need_b = requires_grad(b), need_d = addend.defined() && requires_grad(addend);
  const Tensor ad = need_b ? detach(a) : Tensor(), bd = need_a ? detach(b) : Tensor();
  // b a transposed contiguous matrix (linear's w.t()): its gradient as (g^T a)^T, so that the
  // weight's own gradient (the transpose's) is contiguous, not copied into a contiguous one.
  const bool b_transposed = need_b && b.dim() == 2 && !b.is_contiguous() && b.t().is_contiguous();
  // A bias [N] of a 2-D product (linear's): its gradient, g's column sums, = the row sums of the
  // weight gradient's A = g^T, taken by that product's kernel where it can (matmul_kernel's rowsum).
  const bool bias_rows = need_d && beta == 1 && b_transposed && a.dim() == 2 && addend.dim() == 1;
  autograd::record(
      y, {a, b, addend},
      [ad, bd, yd, alpha, beta, need_a, need_b, need_d, b_transposed, bias_rows](const Tensor& gy) {
        // ReLU's mask: in the products' loads of g where their kernels take it (matmul_kernel's
        // mask), else g masked by its own dispatch, once, for whatever needs it.
        Tensor g = yd.defined() ? Tensor() : gy;
        const bool try_mask = yd.defined() && gy.dim() == 2 && gy.shape() == yd.shape() &&
                              gy.strides() == yd.strides() && gy.offset() == yd.offset();
        auto masked = [&] {
          if (!g.defined()) g = unary_grad::relu(gy, yd, yd, 0, 0);
          return g;
        };
        const Tensor ydt = try_mask ? yd.t() : Tensor();
        Tensor ga, gb, gd;
        if (need_a) {
          const Tensor bt = bd.transpose(-1, -2);
          if (try_mask) ga = matmul_kernel(gy, bt, Tensor(), alpha, 0, Epilogue(), 0, nullptr, &yd);
          if (!ga.defined()) ga = matmul_kernel(masked(), bt, Tensor(), alpha, 0, Epilogue());
        }
        if (need_b && b_transposed) {
          Tensor* rows = bias_rows ? &gd : nullptr;
          if (try_mask) gb = matmul_kernel(gy.t(), ad, Tensor(), alpha, 0, Epilogue(), 0, rows, &ydt);
          if (!gb.defined()) gb = matmul_kernel(masked().t(), ad, Tensor(), alpha, 0, Epilogue(), 0, rows);
          gb = gb.t();
        } else if (need_b) {
          gb = matmul_kernel(ad.transpose(-1, -2), masked(), Tensor(), alpha, 0, Epilogue());
        }
        if (!gd.defined() && need_d) gd = beta == 1 ? masked() : mul(masked(), beta);
        return std::vector<Tensor>{ga, gb, gd};
      },
      "matmul");
  return y;
}

namespace detail {
VecLayout vec4_layout(const Tensor& a, const Tensor& b) {
  VecLayout v;
  if (!is_floating(a.dtype()) || !is_floating(b.dtype())) return v;
  const std::int64_t ra = a.dim() - 2, ca = a.dim() - 1, rb = b.dim() - 2, cb = b.dim() - 1;
  bool a_ok = false, b_ok = false;
  if (quad_aligned(a, ca)) {
    a_ok = v.a_kmajor = true;
    v.qa_s = a.strides()[ra] / 4;
  } else if (quad_aligned(a, ra)) {
    a_ok = true;
    v.qa_s = a.strides()[ca] / 4;
  }
  if (quad_aligned(b, cb)) {
    b_ok = true;
    v.qb_s = b.strides()[rb] / 4;
  } else if (quad_aligned(b, rb)) {
    b_ok = v.b_kmajor = true;
    v.qb_s = b.strides()[cb] / 4;
  }
  v.ok = a_ok && b_ok;
  return v;
}

MatmulVariant matmul_variant(DeviceImpl& dev, const MatmulPlan& plan, const MatmulProblem& problem, const VecLayout& vl,
                             const BatchLayout& bl, const Tensor& d, const Tensor& out, std::int64_t split,
                             const Epilogue& epilogue, DType a_dtype, DType b_dtype) {
  MatmulVariant v;
  v.kernel = plan.kernel;
  v.bd = static_cast<int>(bl.shape.size());
  v.act = epilogue.act, v.affine = epilogue.affine();
  v.addend = d.defined();
  v.no_batch = problem.batch == 1;
  v.split_cols = split > 0;
  v.split_k = plan.splits > 1;
  v.f16_block = plan.f16_block;
  // GLTENSOR_PRECISION=f16-ext-only (debugging, docs/precision.md): the f32 kernels with the f16
  // extension enabled, to tell the extension's effect on the existing code from F16_MATH's.
  if (plan.f16_block > 0 ||
      (settings().precision == PrecisionSetting::f16_ext_only && plan.kernel != MatmulPlan::Kernel::reg))
    v.f16_ext = dev.f16_extension_glsl();
  v.a_kmajor = vl.a_kmajor, v.b_kmajor = vl.b_kmajor;
  v.slice_k = plan.variant & 1, v.unroll_k = plan.variant & 2;
  v.ra = plan.reg_rows, v.cb = plan.reg_quads, v.a_q = plan.a_quad, v.b_q = plan.b_quad, v.ksl = plan.reg_slices;
  v.bm = static_cast<int>(plan.tile_m), v.bn = static_cast<int>(plan.tile_n), v.bk = plan.warp_bk, v.tn = plan.warp_tn;
  v.warp_lanes = plan.warp_lanes, v.edge = plan.warp_edge, v.k_loop = plan.warp_k_loop, v.shk = plan.warp_shk;
  v.out = out.dtype(), v.a = a_dtype, v.b = b_dtype;
  if (d.defined()) v.d = d.dtype();
  return v;
}

GemvVariant gemv_variant(const MatmulPlan& plan, const MatmulProblem& problem, const BatchLayout& bl, const Tensor& d,
                         const Tensor& out, const Epilogue& epilogue, DType a_dtype, DType b_dtype) {
  GemvVariant v;
  v.bd = static_cast<int>(bl.shape.size());
  v.act = epilogue.act, v.affine = epilogue.affine();
  v.rm = plan.tile_m, v.nf = plan.tile_n, v.a_q = plan.a_quad, v.b_q = plan.b_quad;
  v.addend = d.defined(), v.no_batch = problem.batch == 1, v.split_k = plan.splits > 1;
  v.out = out.dtype(), v.a = a_dtype, v.b = b_dtype;
  if (d.defined()) v.d = d.dtype();
  return v;
}

MatmulProblem matmul_problem(const Tensor& a, const Tensor& b, const VecLayout& vl, std::int64_t batch, DType out,
                             bool split_columns, Precision precision) {
  const std::int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  MatmulProblem problem;
  problem.M = M, problem.N = N, problem.K = K, problem.batch = batch, problem.out = out;
  problem.quads = vl.ok, problem.split_columns = split_columns, problem.precision = precision;
  if (is_floating(a.dtype()))
    problem.a_quads = quad_aligned(a, a.dim() - 1) ? 1 : M % 4 == 0 && quad_aligned(a, a.dim() - 2) ? 2 : 0;
  problem.b_kmajor = b.strides()[b.dim() - 2] == 1;
  if (is_floating(b.dtype()))
    problem.b_quads = N % 4 == 0 && quad_aligned(b, b.dim() - 1) ? 1 : quad_aligned(b, b.dim() - 2) ? 2 : 0;
  return problem;
}
}  // namespace detail

namespace {
// Records the plan's dispatch (through the tuner where the plan measures variants). `out` is
// the result, or the partial products with split-K (then alpha 1, no addend, no epilogue).
void launch_matmul(DeviceImpl& dev, const MatmulPlan& plan, const MatmulProblem& problem, const VecLayout& vl,
                   const BatchLayout& bl, const Tensor& a, const Tensor& b, const Tensor& d, const Tensor& out,
                   std::int64_t split, double alpha, double beta, const Epilogue& epilogue, DType a_dtype,
                   DType b_dtype, const Tensor& rowsum = Tensor(), const Tensor& mask = Tensor(),
                   const Tensor& residual = Tensor()) {
  const MatmulParams params{problem.M, problem.N, problem.K, bl, a, b, d, vl, plan, split, alpha, beta, epilogue};
  if (plan.kernel == MatmulPlan::Kernel::gemv) {
    const GemvVariant v = gemv_variant(plan, problem, bl, d, out, epilogue, a_dtype, b_dtype);
    Launch launch(dev, "matmul");
    launch.program(v.kFile, v.defines(), {plan.local_x});
    launch.write(out).read(a).read(b);
    if (d.defined()) launch.read(d);
    launch.params(params).loop_iterations(plan.loop_iterations);
    launch.groups(plan.groups_x, plan.groups_y, plan.groups_z);
    return;
  }
  MatmulVariant v = matmul_variant(dev, plan, problem, vl, bl, d, out, split, epilogue, a_dtype, b_dtype);
  v.rowsum = rowsum.defined();
  v.mask = mask.defined();
  v.residual = residual.defined();
  // variant: bit 0 sliced K, bit 1 unrolled (quad-load kernel only)
  auto run = [&](int variant) {
    Launch launch(dev, "matmul");
    if (v.kernel == MatmulPlan::Kernel::vec4) {
      v.slice_k = variant & 1, v.unroll_k = variant & 2;
      launch.program(v.file(), v.defines(), {v.slice_k ? 256u : 128u});
    } else if (v.kernel == MatmulPlan::Kernel::f16x2 || v.kernel == MatmulPlan::Kernel::warp) {
      launch.program(v.file(), v.defines(), {plan.local_x});
    } else {
      launch.program(v.file(), v.defines(),
                     v.kernel == MatmulPlan::Kernel::reg ? Local{plan.local_x, plan.local_y} : Local{16, 16});
    }
    launch.write(out).read(a).read(b);
    if (d.defined()) launch.read(d);
    if (rowsum.defined()) launch.write(rowsum);
    if (mask.defined()) launch.read(mask);
    if (residual.defined()) launch.read(residual);
    launch.params(params).loop_iterations(plan.loop_iterations);
    launch.groups(plan.groups_x, plan.groups_y, plan.groups_z);
  };
  if (plan.tune) {
    const std::vector<int> variants = matmul_variants(plan);  // without the sliced ones past the device's shared memory
    dev.extension<Tuner>().run(dev, plan.tune_key, static_cast<int>(variants.size()),
                               [&](int i) { run(variants[static_cast<std::size_t>(i)]); });
  } else
    run(plan.variant);
}

// Uniforms of glsl/ops/matmul_sum.comp.
struct MatmulSumParams {
  std::int64_t n, M, N, splits;
  double alpha, beta;
  const Tensor& d;
  const Epilogue& epilogue;
  void set(Uniforms& u) const {
    u.u32("u_n", n);
    u.u32("u_M", M);
    u.u32("u_N", N);
    u.u32("u_nsplit", splits);
    u.f32("u_alpha", alpha);
    u.f32("u_beta", beta);
    u.u32("u_d_off", d.defined() ? d.offset() : 0);
    u.u32("u_d_sm", d.defined() ? d.strides()[static_cast<std::size_t>(d.dim() - 2)] : 0);
    u.u32("u_d_sn", d.defined() ? d.strides()[static_cast<std::size_t>(d.dim() - 1)] : 0);
    u.f32("u_act_p0", epilogue.p0);
    u.f32("u_act_p1", epilogue.p1);
    if (epilogue.affine()) u.f32("u_act_scale", epilogue.scale), u.f32("u_act_shift", epilogue.shift);
  }
};

// Split-K's partials [splits, batch..., M, N] (f32) summed into out with the epilogue: out = act(alpha * sum +
// beta * d), d the addend (undefined: none; one batch entry) laid out [M, N] through its strides;
// transpose: out is [N, M] (one batch entry).
void launch_split_sum(DeviceImpl& dev, const Tensor& partial, const Tensor& d, const Tensor& out, std::int64_t M,
                      std::int64_t N, std::int64_t splits, double alpha, double beta, const Epilogue& epilogue,
                      bool transpose) {
  MatmulSumVariant v;
  v.act = epilogue.act, v.affine = epilogue.affine(), v.addend = d.defined(), v.transpose = transpose;
  v.out = out.dtype(), v.d = d.defined() ? d.dtype() : DType::f32;
  const std::int64_t n = out.numel();
  Launch launch(dev, "matmul_sum");
  launch.program(v.kFile, v.defines(), {256}).write(out).read(partial);
  if (d.defined()) launch.read(d);
  launch.params(MatmulSumParams{n, M, N, splits, alpha, beta, d, epilogue});
  launch.loop_iterations(static_cast<std::uint64_t>(splits)).invocations(static_cast<std::uint64_t>(n));
}

// split > 0: only with the quad-load (f32 or packed-half), warp or REG kernel, no batch and no
// split-K (else returns an undefined tensor); the result [M, N] is written as [N / split, M, split]
// (column groups of `split` become the outer dim: conv2d's [channels, images x positions] lands in
// NCHW without a copy).
// rowsum: where the plan is the REG kernel over one batch entry without split-K, f32 operands and
// result, *rowsum gets a's row sums [M] (sum over K, no alpha) from the same dispatch; else it
// stays as it was (the caller sums).
// mask (ReLU's gradient in the product, a = g or g^T): a's elements are taken where *mask, f32 laid
// out as a (shape, strides, offset), is > 0, else 0 (rowsum too); only where the plan is the REG
// kernel over one batch entry without split-K with f32 a (else returns an undefined tensor).
Tensor matmul_kernel(const Tensor& a, const Tensor& b, const Tensor& addend, double alpha, double beta,
                     const Epilogue& epilogue, std::int64_t split, Tensor* rowsum, const Tensor* mask,
                     bool transpose_out, const Tensor* residual) {
  const char* op = "matmul";
  check_same_device(op, {&a, &b});
  if (addend.defined()) check_same_device(op, {&a, &addend});
  if (a.dim() < 2 || b.dim() < 2)
    throw ShapeError(std::string("gltensor::matmul: expects operands with >= 2 dims here, got ") +
                     to_string(a.shape()) + " and " + to_string(b.shape()));
  const std::int64_t M = a.size(-2), K = a.size(-1), K2 = b.size(-2), N = b.size(-1);
  if (K != K2)
    throw ShapeError("gltensor::matmul: shapes " + to_string(a.shape()) + " and " + to_string(b.shape()) +
                     " cannot be multiplied (" + std::to_string(K) + " != " + std::to_string(K2) + ")");
  DeviceImpl& dev = dev_of(a);
  Enter guard(dev, op);
  Shape batch = broadcast_shapes(op, batch_dims(a), batch_dims(b));
  Shape out_shape = batch;
  out_shape.push_back(M);
  out_shape.push_back(N);
  DType od = promote_types(a.dtype(), b.dtype());
  if (!is_floating(od)) od = DType::f32;
  if (split > 0 && (!batch.empty() || split % 4 != 0 || N % split != 0 || M == 0 || N == 0)) return Tensor();
  const Tensor ea = expand_batch(a, batch), eb = expand_batch(b, batch);
  Tensor ed;
  if (addend.defined()) {
    broadcast_shapes(op, addend.shape(), out_shape);
    ed = addend.expand(out_shape);
  }
  const VecLayout vl = vec4_layout(ea, eb);
  const MatmulProblem problem = matmul_problem(ea, eb, vl, numel_of(batch), od, split > 0, dev.precision());
  const DeviceTraits traits{dev.adapter().software, dev.loop_limit(), dev.fp16_matmul(), dev.caps().max_shared_memory};
  const MatmulPlan plan = plan_matmul(problem, traits, settings());
  if (split > 0 && !plan.split_columns) return Tensor();
  if (mask && (plan.kernel != MatmulPlan::Kernel::reg || plan.splits != 1 || !batch.empty() || split > 0 ||
               a.dtype() != DType::f32 || mask->dtype() != DType::f32 || mask->shape() != a.shape() ||
               mask->strides() != a.strides() || mask->offset() != a.offset()))
    return Tensor();
  // residual (REG only, one batch entry, no split-K, f32): added at C's index, so laid out as C is
  // (contiguous from element 0, C's element count; the split columns' [N / split, M, split] too).
  if (residual && (plan.kernel != MatmulPlan::Kernel::reg || plan.splits != 1 || !batch.empty() || od != DType::f32 ||
                   transpose_out || residual->dtype() != DType::f32 || !residual->is_contiguous() ||
                   residual->offset() != 0 || residual->numel() != M * N))
    return Tensor();
  // transpose_out (2-D operands only): the [N, M] result, written so by the split-K sum, else copied.
  auto fin = [&](const Tensor& r) { return transpose_out ? r.t().contiguous() : r; };
  if (numel_of(out_shape) == 0) return fin(alloc(dev, split > 0 ? Shape{N / split, M, split} : out_shape, od, op));
  if (plan.splits > 1) {
    // Split-K: raw partial products [splits, batch..., M, N] in f32, summed, then the epilogue.
    // Where they would exceed the device's max SSBO block: the same per block of rows (or of
    // columns of one row), each block's result written into its slice of the output.
    const std::int64_t limit = dev.ssbo_limit(), bytes_per_row = plan.splits * problem.batch * N * 4;
    if (bytes_per_row * M > limit) {
      Tensor out = alloc(dev, out_shape, od, op);
      const std::int64_t rows = limit / bytes_per_row, cols = limit / (plan.splits * problem.batch * 4);
      if (rows == 0 && cols == 0)
        throw LimitError(
            "gltensor::matmul: " + std::to_string(plan.splits) + " split-K partial products of " +
            std::to_string(problem.batch) + " batch entries need " + std::to_string(plan.splits * problem.batch * 4) +
            " bytes per output element, more than the device's max SSBO block size of " + std::to_string(limit) +
            " bytes (shapes " + to_string(a.shape()) + " and " + to_string(b.shape()) + ")");
      auto part = [&](std::int64_t m0, std::int64_t mc, std::int64_t n0, std::int64_t nc) {
        const Tensor d = ed.defined() ? ed.narrow(-2, m0, mc).narrow(-1, n0, nc) : Tensor();
        out.narrow(-2, m0, mc)
            .narrow(-1, n0, nc)
            .copy_(matmul_kernel(ea.narrow(-2, m0, mc), eb.narrow(-1, n0, nc), d, alpha, beta, epilogue));
      };
      for (std::int64_t m0 = 0; m0 < M; m0 += std::max<std::int64_t>(rows, 1))
        if (rows > 0)
          part(m0, std::min(rows, M - m0), 0, N);
        else
          for (std::int64_t n0 = 0; n0 < N; n0 += cols) part(m0, 1, n0, std::min(cols, N - n0));
      return fin(out);
    }
    Shape partial_shape = out_shape;
    partial_shape.insert(partial_shape.begin(), plan.splits);
    Tensor partial = alloc(dev, partial_shape, DType::f32, op);
    const BatchLayout bl = collapse_batch(batch, {&ea, &eb, &ed});
    const Tensor none;
    launch_matmul(dev, plan, problem, vl, bl, ea, eb, none, partial, 0, 1.0, 0.0, Epilogue(), a.dtype(), b.dtype());
    // The sum and the epilogue in one dispatch (matmul_sum.comp), the addend over one batch entry,
    // where its loop over the splits fits the device's loop limit (else the sum's reduction splits it).
    if ((problem.batch == 1 || !ed.defined()) &&
        (dev.loop_limit() == 0 || static_cast<std::uint64_t>(plan.splits) <= dev.loop_limit())) {
      Tensor out = alloc(dev, transpose_out ? Shape{N, M} : out_shape, od, op);
      launch_split_sum(dev, partial, ed, out, M, N, plan.splits, alpha, beta, epilogue, transpose_out);
      return out;
    }
    NoGradGuard ng;
    Tensor r = sum(partial, {0});
    if (alpha != 1) r = mul(r, alpha);
    if (ed.defined()) r = add(r, beta == 1 ? ed : mul(ed, beta));
    r = apply_epilogue(r, epilogue);
    return fin(r.dtype() == od ? r : r.to(od));
  }
  Tensor out = alloc(dev, split > 0 ? Shape{N / split, M, split} : out_shape, od, op);
  const BatchLayout bl = collapse_batch(batch, {&ea, &eb, &ed});
  const bool rows = rowsum && plan.kernel == MatmulPlan::Kernel::reg && problem.batch == 1 && split == 0 &&
                    od == DType::f32 && a.dtype() == DType::f32 && b.dtype() == DType::f32 &&
                    reg_sliced_shared_bytes(plan.reg_slices, plan.local_x, true) <= 16384;  // GLES 3.1's minimum
  if (rows) *rowsum = alloc(dev, {M}, DType::f32, op);
  launch_matmul(dev, plan, problem, vl, bl, ea, eb, ed, out, split, alpha, beta, epilogue, a.dtype(), b.dtype(),
                rows ? *rowsum : Tensor(), mask ? *mask : Tensor(), residual ? *residual : Tensor());
  return fin(out);
}
}  // namespace

namespace detail {
Tensor matmul_transposed(const Tensor& a, const Tensor& b) {
  if (a.dim() != 2 || b.dim() != 2)
    throw ShapeError("gltensor::matmul_transposed: expects 2-D operands, got " + to_string(a.shape()) + " and " +
                     to_string(b.shape()));
  return matmul_kernel(autocast_low(a), autocast_low(b), Tensor(), 1.0, 0.0, Epilogue(), 0, nullptr, nullptr, true);
}

Tensor matmul_residual(const Tensor& a, const Tensor& b, const Tensor& addend, const Epilogue& epilogue,
                       const Tensor& residual) {
  if (autograd::any_requires_grad({&a, &b, &addend, &residual})) return Tensor();
  return matmul_kernel(a, b, addend, 1.0, 1.0, epilogue, 0, nullptr, nullptr, false, &residual);
}

Tensor matmul_split_columns(const Tensor& a, const Tensor& b, const Tensor& addend, std::int64_t split,
                            const Epilogue& epilogue, const Tensor& residual) {
  if (autograd::any_requires_grad({&a, &b, &addend, &residual})) return Tensor();
  return matmul_kernel(a, b, addend, 1.0, 1.0, epilogue, split, nullptr, nullptr, false,
                       residual.defined() ? &residual : nullptr);
}
}  // namespace detail

Tensor matmul(const Tensor& a_in, const Tensor& b_in) {
  check_same_device("matmul", {&a_in, &b_in});
  const Tensor a = detail::autocast_low(a_in), b = detail::autocast_low(b_in);
  if (a.dim() == 0 || b.dim() == 0)
    throw ShapeError("gltensor::matmul: both arguments need at least 1 dim, got " + to_string(a.shape()) + " and " +
                     to_string(b.shape()));
  const bool va = a.dim() == 1, vb = b.dim() == 1;
  Tensor ma = va ? a.unsqueeze(0) : a, mb = vb ? b.unsqueeze(1) : b;
  if (ma.size(-1) != mb.size(-2))
    throw ShapeError("gltensor::matmul: shapes " + to_string(a.shape()) + " and " + to_string(b.shape()) +
                     " cannot be multiplied (" + std::to_string(ma.size(-1)) + " != " + std::to_string(mb.size(-2)) +
                     ")");
  Tensor r = matmul_fused(ma, mb, Tensor(), 1.0, 0.0, Epilogue());
  if (vb) r = r.squeeze(-1);
  if (va) r = r.squeeze(r.dim() - (vb ? 1 : 2));
  return r;
}

Tensor gemm(const Tensor& a_in, const Tensor& b_in, const Tensor& c_in, double alpha, double beta, bool ta, bool tb) {
  const Tensor a = detail::autocast_low(a_in), b = detail::autocast_low(b_in), c = detail::autocast_low(c_in);
  if (a.defined() && b.defined() && (a.dim() != 2 || b.dim() != 2))
    throw ShapeError("gltensor::gemm: expects 2-D a and b, got " + to_string(a.shape()) + " and " +
                     to_string(b.shape()));
  return matmul_fused(ta ? a.t() : a, tb ? b.t() : b, c, alpha, beta, Epilogue());
}

Tensor linear(const Tensor& x_in, const Tensor& w_in, const Tensor& bias_in, const Epilogue& act) {
  check_same_device("linear", {&x_in, &w_in});
  const Tensor x = detail::autocast_low(x_in), w = detail::autocast_low(w_in), bias = detail::autocast_low(bias_in);
  if (w.dim() != 2 || x.dim() < 1 || x.size(-1) != w.size(1))
    throw ShapeError("gltensor::linear: input " + to_string(x.shape()) + " and weight " + to_string(w.shape()) +
                     " do not match (weight must be [out, in] with in = input's last dim)");
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != w.size(0)))
    throw ShapeError("gltensor::linear: bias " + to_string(bias.shape()) + " must be [" + std::to_string(w.size(0)) +
                     "]");
  Tensor x2 = x.dim() == 1 ? x.unsqueeze(0) : x;
  Tensor r = matmul_fused(x2, w.t(), bias, 1.0, 1.0, act);
  return x.dim() == 1 ? r.squeeze(0) : r;
}

}  // namespace gltensor
