// matmul / gemm / linear on matmul.comp.
#include <algorithm>
#include <cstdlib>
#include <string>

#include "gltensor/autograd.hpp"
#include "gltensor/linalg.hpp"
#include "gltensor/ops.hpp"
#include "runtime/codegen.hpp"
#include "runtime/tuner.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {
using namespace detail;

namespace {
Tensor apply_activation(const Tensor& z, Activation act) {
  switch (act) {
    case Activation::none:
      return z;
    case Activation::relu:
      return relu(z);
    case Activation::gelu:
      return gelu(z);
    case Activation::gelu_tanh:
      return gelu(z, "tanh");
    case Activation::sigmoid:
      return sigmoid(z);
    case Activation::tanh:
      return tanh(z);
    case Activation::silu:
      return silu(z);
  }
  return z;
}
Tensor matmul_kernel(const Tensor& a, const Tensor& b, const Tensor& addend, double alpha, double beta,
                     Activation activation, std::int64_t split = 0);
}  // namespace

Tensor matmul_fused(const Tensor& a, const Tensor& b, const Tensor& addend, double alpha, double beta,
                    Activation activation) {
  if (!autograd::any_requires_grad({&a, &b, &addend})) return matmul_kernel(a, b, addend, alpha, beta, activation);
  // With gradients: the matmul (+ addend) records its node; the activation records its own.
  if (activation != Activation::none)
    return apply_activation(matmul_fused(a, b, addend, alpha, beta, Activation::none), activation);
  Tensor y = matmul_kernel(a, b, addend, alpha, beta, Activation::none);
  const Tensor ad = detach(a), bd = detach(b);
  autograd::record(
      y, {a, b, addend},
      [ad, bd, alpha, beta](const Tensor& g) {
        Tensor ga = matmul_kernel(g, bd.transpose(-1, -2), Tensor(), alpha, 0, Activation::none);
        Tensor gb = matmul_kernel(ad.transpose(-1, -2), g, Tensor(), alpha, 0, Activation::none);
        return std::vector<Tensor>{ga, gb, beta == 1 ? g : mul(g, beta)};
      },
      "matmul");
  return y;
}

namespace {
// VEC4 kernel eligibility: whole 64x128x8 tiles; each operand contiguous along one of its matrix
// dims with quads of 4 elements on 4-element boundaries (offsets, strides and batch strides
// multiples of 4); floating dtypes.
struct VecLayout {
  bool ok = false, a_kmajor = false, b_kmajor = false;
  std::int64_t qa_s = 0, qb_s = 0;  // quad stride of the other dim
};
VecLayout vec4_layout(const Tensor& a, const Tensor& b, std::int64_t M, std::int64_t N, std::int64_t K) {
  VecLayout v;
  if (!is_floating(a.dtype()) || !is_floating(b.dtype()) || M % 64 || N % 128 || K % 8) return v;
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

// split > 0: only with the VEC4 kernel and no batch (else returns an undefined tensor); the
// result [M, N] is written as [N / split, M, split] (column groups of `split` become the outer
// dim: conv2d's [channels, images x positions] lands in NCHW without a copy).
Tensor matmul_kernel(const Tensor& a, const Tensor& b, const Tensor& addend, double alpha, double beta,
                     Activation activation, std::int64_t split) {
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
  const BatchLayout bl = collapse_batch(batch, {&ea, &eb, &ed});
  const std::size_t bd = bl.shape.size();
  std::string h =
      "#define BD " + std::to_string(bd) + "\n#define ACT " + std::to_string(static_cast<int>(activation)) + "\n";
  // Kernel variant: VEC4 (quad loads, 64x128 tiles) where both operands are contiguous along M/K
  // or K/N in aligned quads (bench/RESULTS.md: 1.7x the scalar kernels on an H100); otherwise the
  // scalar tiled kernel, 128x128 on software rasterizers (6.8x 64x64 on llvmpipe), 64x64 on GPUs.
  // GLTENSOR_MATMUL_KERNEL=vec4|tile64|tile128 overrides the choice where the kernel applies
  // (read on every call, so tests can exercise every path).
  const char* forced_env = std::getenv("GLTENSOR_MATMUL_KERNEL");
  const std::string forced = forced_env ? forced_env : "";
  const VecLayout vl = vec4_layout(ea, eb, M, N, K);
  // Whole tiles only, and enough of them to fill a GPU: with few tiles the 64x64 kernel's
  // smaller tiles spread better (bench/RESULTS.md).
  const std::int64_t vec4_tiles = (M / 64) * (N / 128) * numel_of(batch);
  const bool forced_vec4 = forced.rfind("vec4", 0) == 0;
  const bool use_vec4 = vl.ok && (forced_vec4 || (forced.empty() && vec4_tiles >= 256));
  // Variants of the quad-load kernel: sliced K (two halves of K per tile, 256 invocations per
  // workgroup) fills a GPU's waves better where the tiles make a fraction of a wave over a whole
  // one, and worse elsewhere (conv2d's 784 tiles of K = 576 on an H100: 0.344 ms against 0.395;
  // 512 tiles of K = 2048: 0.749 against 0.659); the inner product written out (UNROLL_K) ran
  // conv2d 10% faster and f16 4096 30% slower (bench/RESULTS.md). Neither follows from what GL
  // reports, so the choice is measured on first use per (tiles, K, dtype) (Tuner) where K splits
  // into whole K-tiles, K >= 256 and the tiles are at most 4096. GLTENSOR_MATMUL_KERNEL=vec4
  // forces the plain variant, with "s" (vec4s) sliced K where K splits, with "u" unrolled.
  const bool slice_ok = use_vec4 && K % 16 == 0;
  const int forced_variant = !forced_vec4 ? 0
                                          : (slice_ok && forced.find('s', 4) != std::string::npos ? 1 : 0) |
                                                (forced.find('u', 4) != std::string::npos ? 2 : 0);
  const bool tuned = slice_ok && forced.empty() && K >= 256 && vec4_tiles <= 4096;
  if (split > 0 && !use_vec4) return Tensor();
  Tensor out = alloc(dev, split > 0 ? Shape{N / split, M, split} : out_shape, od, op);
  if (out.numel() == 0) return out;
  std::int64_t tile_m = 64, tile_n = 64;
  if (use_vec4) {
    tile_n = 128;
    h += std::string("#define VEC4 1\n#define BM 64u\n#define BN 128u\n#define A_KMAJOR ") + (vl.a_kmajor ? "1" : "0") +
         "\n#define B_KMAJOR " + (vl.b_kmajor ? "1" : "0") + "\n";
    if (od == DType::f32) h += "#define OUT_F32 1\n";
  } else {
    const bool big = M >= 128 && N >= 128 && K >= 8;
    const int want = forced == "tile128" ? 128 : forced == "tile64" ? 64 : (dev.adapter.software ? 128 : 64);
    tile_m = tile_n = (want == 128 && big) ? 128 : 64;
    h += "#define TILE " + std::to_string(tile_m) + "\n";
  }
  if (ed.defined()) h += "#define ADDEND 1\n";
  if (numel_of(batch) == 1) h += "#define NO_BATCH 1\n";
  if (split > 0) h += "#define SPLIT_COLS 1\n";
  if (use_vec4) {
    h += (od == DType::f32 ? operand_glsl_vec4(0, od, CT::f32, true) : operand_glsl(0, od, CT::f32, true)) +
         quad_glsl("A", 1, a.dtype()) + quad_glsl("B", 2, b.dtype());
  } else {
    h += operand_glsl(0, od, CT::f32, true) + operand_glsl(1, a.dtype(), CT::f32, false) +
         operand_glsl(2, b.dtype(), CT::f32, false);
  }
  if (ed.defined()) h += operand_glsl(3, ed.dtype(), CT::f32, false);
  const std::uint64_t gx = static_cast<std::uint64_t>((N + tile_n - 1) / tile_n),
                      gy = static_cast<std::uint64_t>((M + tile_m - 1) / tile_m);
  if (gx > static_cast<std::uint64_t>(dev.caps.max_workgroup_count[0]) ||
      gy > static_cast<std::uint64_t>(dev.caps.max_workgroup_count[1]))
    throw LimitError("gltensor::matmul: result " + to_string(out_shape) +
                     " needs more workgroups than the device allows");
  // variant: bit 0 sliced K, bit 1 unrolled (quad-load kernel only)
  auto launch = [&](int variant) {
    const bool slice_k = variant & 1;
    const Program& p =
        !use_vec4
            ? dev.programs.get("matmul.comp", h, 16, 16, 1)
            : dev.programs.get("matmul.comp",
                               h + (slice_k ? "#define SLICE_K 1\n" : "") + (variant & 2 ? "#define UNROLL_K 1\n" : ""),
                               slice_k ? 256 : 128);
    auto u = [&](const char* n, std::int64_t v) { glProgramUniform1ui(p.id, p.loc(n), static_cast<GLuint>(v)); };
    u("u_M", M);
    u("u_N", N);
    u("u_K", K);
    glProgramUniform1uiv(p.id, p.loc("u_bshape"), static_cast<GLsizei>(bd), bl.shape.data());
    glProgramUniform1uiv(p.id, p.loc("u_bstride_a"), static_cast<GLsizei>(bd), bl.strides[0].data());
    glProgramUniform1uiv(p.id, p.loc("u_bstride_b"), static_cast<GLsizei>(bd), bl.strides[1].data());
    glProgramUniform1uiv(p.id, p.loc("u_bstride_d"), static_cast<GLsizei>(bd), bl.strides[2].data());
    u("u_a_off", ea.offset());
    u("u_b_off", eb.offset());
    u("u_a_sm", ea.strides()[ea.dim() - 2]);
    u("u_a_sk", ea.strides()[ea.dim() - 1]);
    u("u_b_sk", eb.strides()[eb.dim() - 2]);
    u("u_b_sn", eb.strides()[eb.dim() - 1]);
    if (ed.defined()) {
      u("u_d_off", ed.offset());
      u("u_d_sm", ed.strides()[ed.dim() - 2]);
      u("u_d_sn", ed.strides()[ed.dim() - 1]);
    }
    if (use_vec4) {
      u("u_qa_s", vl.qa_s);
      u("u_qb_s", vl.qb_s);
      if (split > 0) u("u_split", split);
    }
    glProgramUniform1f(p.id, p.loc("u_alpha"), static_cast<float>(alpha));
    glProgramUniform1f(p.id, p.loc("u_beta"), static_cast<float>(beta));
    std::vector<BufferUse> uses = {
        {out.impl()->storage.get(), true}, {a.impl()->storage.get(), false}, {b.impl()->storage.get(), false}};
    if (ed.defined()) uses.push_back({ed.impl()->storage.get(), false});
    const std::int64_t nbatch = numel_of(batch);
    const std::int64_t zmax = std::max(1, dev.caps.max_workgroup_count[2]);
    for (std::int64_t z0 = 0; z0 < nbatch; z0 += zmax) {
      u("u_zbase", z0);
      dev.dispatch(p, static_cast<std::uint32_t>(gx), static_cast<std::uint32_t>(gy),
                   static_cast<std::uint32_t>(std::min(zmax, nbatch - z0)), uses);
    }
  };
  if (tuned)
    dev.tuner.run(dev, "matmul_vec4/" + std::to_string(vec4_tiles) + "/" + std::to_string(K) + "/" + dtype_name(od), 4,
                  launch);
  else
    launch(forced_variant);
  return out;
}
}  // namespace

namespace detail {
Tensor matmul_split_columns(const Tensor& a, const Tensor& b, const Tensor& addend, std::int64_t split,
                            Activation activation) {
  if (autograd::any_requires_grad({&a, &b, &addend})) return Tensor();
  return matmul_kernel(a, b, addend, 1.0, 1.0, activation, split);
}
}  // namespace detail

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_same_device("matmul", {&a, &b});
  if (a.dim() == 0 || b.dim() == 0)
    throw ShapeError("gltensor::matmul: both arguments need at least 1 dim, got " + to_string(a.shape()) + " and " +
                     to_string(b.shape()));
  const bool va = a.dim() == 1, vb = b.dim() == 1;
  Tensor ma = va ? a.unsqueeze(0) : a, mb = vb ? b.unsqueeze(1) : b;
  if (ma.size(-1) != mb.size(-2))
    throw ShapeError("gltensor::matmul: shapes " + to_string(a.shape()) + " and " + to_string(b.shape()) +
                     " cannot be multiplied (" + std::to_string(ma.size(-1)) + " != " + std::to_string(mb.size(-2)) +
                     ")");
  Tensor r = matmul_fused(ma, mb, Tensor(), 1.0, 0.0, Activation::none);
  if (vb) r = r.squeeze(-1);
  if (va) r = r.squeeze(r.dim() - (vb ? 1 : 2));
  return r;
}

Tensor gemm(const Tensor& a, const Tensor& b, const Tensor& c, double alpha, double beta, bool ta, bool tb) {
  if (a.defined() && b.defined() && (a.dim() != 2 || b.dim() != 2))
    throw ShapeError("gltensor::gemm: expects 2-D a and b, got " + to_string(a.shape()) + " and " +
                     to_string(b.shape()));
  return matmul_fused(ta ? a.t() : a, tb ? b.t() : b, c, alpha, beta, Activation::none);
}

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias, Activation act) {
  check_same_device("linear", {&x, &w});
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
