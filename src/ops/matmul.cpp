// matmul / gemm / linear on matmul.comp (GEMV: gemv.comp).
#include <algorithm>
#include <string>

#include "gltensor/autograd.hpp"
#include "gltensor/linalg.hpp"
#include "gltensor/ops.hpp"
#include "gltensor/reduce.hpp"
#include "ops/activation.hpp"
#include "ops/autocast.hpp"
#include "ops/batched.hpp"
#include "ops/matmul_plan.hpp"
#include "runtime/codegen.hpp"
#include "runtime/launch.hpp"
#include "runtime/tuner.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {
using namespace detail;

namespace {
Tensor matmul_kernel(const Tensor& a, const Tensor& b, const Tensor& addend, double alpha, double beta,
                     const Epilogue& epilogue, std::int64_t split = 0);
}  // namespace

Tensor matmul_fused(const Tensor& a, const Tensor& b, const Tensor& addend, double alpha, double beta,
                    const Epilogue& epilogue) {
  check_epilogue("matmul", epilogue);
  if (!autograd::any_requires_grad({&a, &b, &addend})) return matmul_kernel(a, b, addend, alpha, beta, epilogue);
  // With gradients: the matmul (+ addend) records its node; the activation records its own.
  if (epilogue.act != Activation::none)
    return apply_epilogue(matmul_fused(a, b, addend, alpha, beta, Epilogue()), epilogue);
  Tensor y = matmul_kernel(a, b, addend, alpha, beta, Epilogue());
  // Only the gradients some input needs (a layer's input batch needs none).
  const bool need_a = requires_grad(a), need_b = requires_grad(b), need_d = addend.defined() && requires_grad(addend);
  const Tensor ad = need_b ? detach(a) : Tensor(), bd = need_a ? detach(b) : Tensor();
  autograd::record(
      y, {a, b, addend},
      [ad, bd, alpha, beta, need_a, need_b, need_d](const Tensor& g) {
        Tensor ga = need_a ? matmul_kernel(g, bd.transpose(-1, -2), Tensor(), alpha, 0, Epilogue()) : Tensor();
        Tensor gb = need_b ? matmul_kernel(ad.transpose(-1, -2), g, Tensor(), alpha, 0, Epilogue()) : Tensor();
        return std::vector<Tensor>{ga, gb, !need_d ? Tensor() : beta == 1 ? g : mul(g, beta)};
      },
      "matmul");
  return y;
}

namespace {
// Quad-load kernel operands: each contiguous along one of its matrix dims with quads of 4
// elements on 4-element boundaries (offsets, strides and batch strides multiples of 4);
// floating dtypes.
struct VecLayout {
  bool ok = false, a_kmajor = false, b_kmajor = false;
  std::int64_t qa_s = 0, qb_s = 0;  // quad stride of the other dim
};
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

// Declares operand `index` as quads: vec4 quadNAME(i) loads quad i (elements 4i..4i+3).
std::string quad_glsl(const char* name, int index, DType d) {
  const std::string n = name, i = std::to_string(index);
  if (d == DType::f32)
    return "layout(std430, binding = " + i + ") readonly restrict buffer Quad" + n + " { vec4 q" + n +
           "[]; };\nvec4 quad" + n + "(uint i) { return q" + n + "[i]; }\n";
  const std::string unpack = d == DType::f16 ? "vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y))"
                                             : "vec4(uintBitsToFloat(w.x << 16), uintBitsToFloat(w.x & 0xffff0000u), "
                                               "uintBitsToFloat(w.y << 16), uintBitsToFloat(w.y & 0xffff0000u))";
  return "layout(std430, binding = " + i + ") readonly restrict buffer Quad" + n + " { uvec2 q" + n +
         "[]; };\nvec4 quad" + n + "(uint i) { uvec2 w = q" + n + "[i]; return " + unpack + "; }\n";
}

// Uniforms of glsl/ops/matmul.comp.
struct MatmulParams {
  std::int64_t M, N, K;
  const BatchLayout& bl;
  const Tensor &a, &b, &d;  // expanded to the batch; d may be undefined
  const VecLayout& vl;
  const MatmulPlan& plan;
  std::int64_t split;
  double alpha, beta;
  const Epilogue& epilogue;
  void set(Uniforms& u) const {
    u.u32("u_M", M);
    u.u32("u_N", N);
    u.u32("u_K", K);
    u.u32s("u_bshape", bl.shape);
    u.u32s("u_bstride_a", bl.strides[0]);
    u.u32s("u_bstride_b", bl.strides[1]);
    u.u32s("u_bstride_d", bl.strides[2]);
    u.u32("u_a_off", a.offset());
    u.u32("u_b_off", b.offset());
    u.u32("u_a_sm", a.strides()[a.dim() - 2]);
    u.u32("u_a_sk", a.strides()[a.dim() - 1]);
    u.u32("u_b_sk", b.strides()[b.dim() - 2]);
    u.u32("u_b_sn", b.strides()[b.dim() - 1]);
    if (d.defined()) {
      u.u32("u_d_off", d.offset());
      u.u32("u_d_sm", d.strides()[d.dim() - 2]);
      u.u32("u_d_sn", d.strides()[d.dim() - 1]);
    }
    if (plan.kernel == MatmulPlan::Kernel::vec4) {
      u.u32("u_qa_s", vl.qa_s);
      u.u32("u_qb_s", vl.qb_s);
    }
    if (split > 0) u.u32("u_split", split);
    u.f32("u_alpha", alpha);
    u.f32("u_beta", beta);
    u.f32("u_act_p0", epilogue.p0);
    u.f32("u_act_p1", epilogue.p1);
    if (plan.splits > 1) {
      u.u32("u_kchunk", plan.kchunk);
      u.u32("u_nsplit", plan.splits);
    }
  }
};

// Records the plan's dispatch (through the tuner where the plan measures variants). `out` is
// the result, or the partial products with split-K (then alpha 1, no addend, no epilogue).
void launch_matmul(DeviceImpl& dev, const MatmulPlan& plan, const MatmulProblem& problem, const VecLayout& vl,
                   const BatchLayout& bl, const Tensor& a, const Tensor& b, const Tensor& d, const Tensor& out,
                   std::int64_t split, double alpha, double beta, const Epilogue& epilogue, DType a_dtype,
                   DType b_dtype) {
  const bool vec4 = plan.kernel == MatmulPlan::Kernel::vec4, reg = plan.kernel == MatmulPlan::Kernel::reg;
  const bool gemv = plan.kernel == MatmulPlan::Kernel::gemv;
  const DType od = out.dtype();
  std::string h = "#define BD " + std::to_string(bl.shape.size()) + "\n";
  if (const std::string act = activation_glsl(epilogue.act); !act.empty()) h += "#define ACT(x) " + act + "\n";
  if (gemv) {
    h += "#define RM " + std::to_string(plan.tile_m) + "u\n#define NF " + std::to_string(plan.tile_n) +
         "u\n#define A_Q " + std::to_string(plan.a_quad) + "\n#define B_Q " + std::to_string(plan.b_quad) + "\n";
  } else if (reg) {
    // The block written out for the kernel: ROWS(X) = X(0) .. X(RA - 1) and the other lists.
    auto list = [](int n, const char* pre) {
      std::string l;
      for (int i = 0; i < n; ++i) l += std::string(" X(") + pre + std::to_string(i) + ")";
      return l;
    };
    const int ra = plan.reg_rows, cb = plan.reg_quads;
    h += "#define REG 1\n#define RA " + std::to_string(ra) + "\n#define CB " + std::to_string(cb) + "\n#define A_Q " +
         std::to_string(plan.a_quad) + "\n#define B_Q " + std::to_string(plan.b_quad) + "\n#define ROWS(X)" +
         list(ra, "") + "\n#define ROWQ(X)" + list(ra / 4, "") + "\n#define COLS(X)" + list(cb, "") +
         "\n#define COLN(X)" + list(4 * cb, "") + "\n#define COLS_I(X, i)" + list(cb, "i, ") + "\n";
  } else if (vec4) {
    h += std::string("#define VEC4 1\n#define BM 64u\n#define BN 128u\n#define A_KMAJOR ") + (vl.a_kmajor ? "1" : "0") +
         "\n#define B_KMAJOR " + (vl.b_kmajor ? "1" : "0") + "\n";
    if (od == DType::f32) h += "#define OUT_F32 1\n";
  } else {
    h += "#define TILE " + std::to_string(plan.tile_m) + "\n";
  }
  if (d.defined()) h += "#define ADDEND 1\n";
  // GLTENSOR_PRECISION=f16-ext-only (debugging, docs/precision.md): the f32 kernels with the f16
  // extension enabled, to tell the extension's effect on the existing code from F16_MATH's.
  if (plan.f16_block > 0) {
    h += dev.f16_extension_glsl() + "#define F16_MATH 1\n#define F16_BLOCK " + std::to_string(plan.f16_block) + "u\n";
  } else if (settings().precision == PrecisionSetting::f16_ext_only && !reg && !gemv) {
    h += dev.f16_extension_glsl();
  }
  if (problem.batch == 1) h += "#define NO_BATCH 1\n";
  if (split > 0) h += "#define SPLIT_COLS 1\n";
  if (plan.splits > 1) h += "#define SPLIT_K 1\n";
  if (vec4) {
    h += (od == DType::f32 ? operand_glsl_vec4(0, od, CT::f32, true) : operand_glsl(0, od, CT::f32, true)) +
         quad_glsl("A", 1, a_dtype) + quad_glsl("B", 2, b_dtype);
  } else {
    // REG reads quads and, for a K % 4 tail, elements: both views of a quad operand.
    h += operand_glsl(0, od, CT::f32, true) + operand_glsl(1, a_dtype, CT::f32, false) +
         operand_glsl(2, b_dtype, CT::f32, false);
    if ((reg || gemv) && plan.a_quad) h += quad_glsl("A", 1, a_dtype);
    if ((reg || gemv) && plan.b_quad) h += quad_glsl("B", 2, b_dtype);
  }
  if (d.defined()) h += operand_glsl(3, d.dtype(), CT::f32, false);
  const MatmulParams params{problem.M, problem.N, problem.K, bl, a, b, d, vl, plan, split, alpha, beta, epilogue};
  // variant: bit 0 sliced K, bit 1 unrolled (quad-load kernel only)
  auto run = [&](int variant) {
    Launch launch(dev, "matmul");
    if (gemv) {
      launch.program("gemv.comp", h, {plan.local_x});
    } else if (reg) {
      launch.program("matmul.comp", h, {plan.local_x});
    } else if (!vec4) {
      launch.program("matmul.comp", h, {16, 16});
    } else {
      const bool slice_k = variant & 1;
      launch.program("matmul.comp",
                     h + (slice_k ? "#define SLICE_K 1\n" : "") + (variant & 2 ? "#define UNROLL_K 1\n" : ""),
                     {slice_k ? 256u : 128u});
    }
    launch.write(out).read(a).read(b);
    if (d.defined()) launch.read(d);
    launch.params(params).loop_iterations(plan.loop_iterations);
    launch.groups(plan.groups_x, plan.groups_y, plan.groups_z);
  };
  if (plan.tune)
    dev.extension<Tuner>().run(dev, plan.tune_key, 4, run);
  else
    run(plan.variant);
}

// split > 0: only with the quad-load or REG kernel, no batch and no split-K (else returns an
// undefined tensor); the result [M, N] is written as [N / split, M, split] (column groups of `split`
// become the outer dim: conv2d's [channels, images x positions] lands in NCHW without a copy).
Tensor matmul_kernel(const Tensor& a, const Tensor& b, const Tensor& addend, double alpha, double beta,
                     const Epilogue& epilogue, std::int64_t split) {
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
  MatmulProblem problem;
  problem.M = M, problem.N = N, problem.K = K, problem.batch = numel_of(batch), problem.out = od;
  problem.quads = vl.ok, problem.split_columns = split > 0, problem.precision = dev.precision();
  if (is_floating(ea.dtype()))
    problem.a_quads = quad_aligned(ea, ea.dim() - 1) ? 1 : M % 4 == 0 && quad_aligned(ea, ea.dim() - 2) ? 2 : 0;
  problem.b_kmajor = eb.strides()[eb.dim() - 2] == 1;
  if (is_floating(eb.dtype()))
    problem.b_quads = N % 4 == 0 && quad_aligned(eb, eb.dim() - 1) ? 1 : quad_aligned(eb, eb.dim() - 2) ? 2 : 0;
  const DeviceTraits traits{dev.adapter().software, dev.loop_limit(), dev.fp16_matmul()};
  const MatmulPlan plan = plan_matmul(problem, traits, settings());
  if (split > 0 && !plan.split_columns) return Tensor();
  if (numel_of(out_shape) == 0) return alloc(dev, split > 0 ? Shape{N / split, M, split} : out_shape, od, op);
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
      return out;
    }
    Shape partial_shape = out_shape;
    partial_shape.insert(partial_shape.begin(), plan.splits);
    Tensor partial = alloc(dev, partial_shape, DType::f32, op);
    const BatchLayout bl = collapse_batch(batch, {&ea, &eb, &ed});
    const Tensor none;
    launch_matmul(dev, plan, problem, vl, bl, ea, eb, none, partial, 0, 1.0, 0.0, Epilogue(), a.dtype(), b.dtype());
    NoGradGuard ng;
    Tensor r = sum(partial, {0});
    if (alpha != 1) r = mul(r, alpha);
    if (ed.defined()) r = add(r, beta == 1 ? ed : mul(ed, beta));
    r = apply_epilogue(r, epilogue);
    return r.dtype() == od ? r : r.to(od);
  }
  Tensor out = alloc(dev, split > 0 ? Shape{N / split, M, split} : out_shape, od, op);
  const BatchLayout bl = collapse_batch(batch, {&ea, &eb, &ed});
  launch_matmul(dev, plan, problem, vl, bl, ea, eb, ed, out, split, alpha, beta, epilogue, a.dtype(), b.dtype());
  return out;
}
}  // namespace

namespace detail {
Tensor matmul_split_columns(const Tensor& a, const Tensor& b, const Tensor& addend, std::int64_t split,
                            const Epilogue& epilogue) {
  if (autograd::any_requires_grad({&a, &b, &addend})) return Tensor();
  return matmul_kernel(a, b, addend, 1.0, 1.0, epilogue, split);
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
