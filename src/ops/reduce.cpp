// Reductions (reduce.comp), softmax (softmax.comp), cumsum (scan.comp).
#include <algorithm>

#include "runtime/codegen.hpp"
#include "gltensor/autograd.hpp"
#include "gltensor/indexing.hpp"
#include "gltensor/ops.hpp"
#include "gltensor/reduce.hpp"
#include "autograd/grad_formulas.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {
using namespace detail;

namespace {

enum Red { kSum = 0, kProd, kMax, kMin, kArgmax, kArgmin, kVar, kLse, kL1, kL2, kAll, kAny };

std::vector<bool> reduced_mask(const char* op, const Tensor& x, const Dims& dims) {
  std::vector<bool> red(static_cast<std::size_t>(x.dim()), dims.empty());
  for (auto d : dims) {
    const auto w = wrap_dim(op, d, x.dim());
    if (x.dim() == 0) continue;
    if (red[w])
      throw ValueError(std::string("gltensor::") + op + ": dim " + std::to_string(d) + " appears more than once");
    red[w] = true;
  }
  return red;
}

// Collapses (shape, strides) pairs in place: drops size-1 dims, merges contiguous neighbours.
void collapse(Shape& shape, Shape& strides) {
  std::vector<Shape> st{strides};
  merge_dims(shape, st, 0);
  strides = st[0];
}

std::vector<GLuint> u32(const Shape& v) { return {v.begin(), v.end()}; }

// Grid for n workgroups within the per-dimension limit.
void grid_for(DeviceImpl& dev, std::uint64_t n, std::uint32_t& gx, std::uint32_t& gy) {
  const std::uint64_t m = dev.max_groups_x();
  gx = static_cast<std::uint32_t>(std::min<std::uint64_t>(n, m));
  gy = static_cast<std::uint32_t>((n + m - 1) / m);
  if (gy > static_cast<std::uint64_t>(dev.caps.max_workgroup_count[1]))
    throw LimitError("gltensor::reduce: " + std::to_string(n) + " workgroups exceed the device's grid");
}

// One pass of reduce_rows.comp: `rows` rows of R contiguous elements of `in` (row o at
// in.offset() + o * row_stride), G chunks of `chunk` elements per row, results to out[0 ..
// rows * G) (partial sums when G > 1).
void reduce_rows_pass(DeviceImpl& dev, const Tensor& in, std::int64_t rows, std::int64_t R, std::int64_t row_stride,
                      std::int64_t G, std::int64_t chunk, int f, int post, double div, const Tensor& out) {
  const bool quads = in.dtype() == DType::f32 && in.offset() % 4 == 0 && (rows == 1 || row_stride % 4 == 0);
  const bool sg = dev.subgroup_arithmetic();
  std::string h = "#define F " + std::to_string(f) + "\n#define POST " + std::to_string(post) + "\n";
  if (sg)
    h += "#extension GL_KHR_shader_subgroup_basic : require\n#extension GL_KHR_shader_subgroup_arithmetic : require\n"
         "#define SUBGROUP 1\n";
  h += operand_glsl(0, out.dtype(), CT::f32, true);
  if (quads) {
    h += "#define QUADS 1\n";
    h += operand_glsl_vec4(1, in.dtype(), CT::f32, false);
  } else {
    h += operand_glsl(1, in.dtype(), CT::f32, false);
  }
  const Program& p = dev.programs.get("reduce_rows.comp", h, std::min<std::int64_t>(R, chunk) >= 1024 ? 256 : 64);
  p.set_uint("u_rows", static_cast<GLuint>(rows));
  p.set_uint("u_R", static_cast<GLuint>(R));
  p.set_uint("u_row_stride", static_cast<GLuint>(row_stride));
  p.set_uint("u_in_off", static_cast<GLuint>(in.offset()));
  p.set_uint("u_chunk", static_cast<GLuint>(chunk));
  p.set_uint("u_G", static_cast<GLuint>(G));
  p.set_uint("u_out_off", static_cast<GLuint>(out.offset()));
  p.set_float("u_div", static_cast<float>(div));
  BufferUse uses[] = {{out.impl()->storage.get(), true}, {in.impl()->storage.get(), false}};
  std::uint32_t gx, gy;
  grid_for(dev, static_cast<std::uint64_t>(rows * G), gx, gy);
  dev.dispatch(p, gx, gy, 1, uses);
}

// Fast path for sum, mean and the L1/L2 norms of floating inputs whose reduced elements are
// contiguous (one collapsed dim of stride 1) in rows of one stride: 128-bit loads, no index
// tracking, subgroup sums where available (bench/RESULTS.md). Returns false where it does not
// apply. (kshape, kstride) and (rshape, rstride) are collapsed.
bool reduce_rows(DeviceImpl& dev, Red red, int post, const Tensor& x, const Tensor& out, const Shape& kshape,
                 const Shape& kstride, const Shape& rshape, const Shape& rstride) {
  if ((red != kSum && red != kL1 && red != kL2) || !is_floating(x.dtype()) || !is_floating(out.dtype())) return false;
  if (rshape.size() != 1 || rstride[0] != 1 || kshape.size() != 1) return false;
  const std::int64_t rows = kshape[0], R = rshape[0];
  const int f = red == kL1 ? 1 : red == kL2 ? 2 : 0, final_post = red == kL2 ? 2 : post;
  // Chunks per row: at least 16 elements per invocation, about 2048 workgroups in all at most.
  const std::int64_t per_group = 256 * 16;
  std::int64_t G = 1;
  if (R > per_group) G = std::min((R + per_group - 1) / per_group, std::max<std::int64_t>(1, 2048 / rows));
  const std::int64_t chunk = ((R + G - 1) / G + 3) / 4 * 4;
  G = (R + chunk - 1) / chunk;
  if (G == 1) {
    reduce_rows_pass(dev, x, rows, R, kstride[0], 1, chunk, f, final_post, static_cast<double>(R), out);
    return true;
  }
  Tensor partial = alloc(dev, {rows * G}, DType::f32, "reduce");
  reduce_rows_pass(dev, x, rows, R, kstride[0], G, chunk, f, 0, 1.0, partial);
  reduce_rows_pass(dev, partial, rows, G, G, 1, (G + 3) / 4 * 4, 0, final_post, static_cast<double>(R), out);
  return true;
}

Tensor reduce(const char* op, Red red, const Tensor& x_in, const Dims& dims, bool keepdim, DType out_dtype,
              double correction = 0, int post = 0) {
  check_defined(op, x_in);
  DeviceImpl& dev = dev_of(x_in);
  Enter guard(dev, op);
  const Tensor& x = x_in;
  const auto red_mask = reduced_mask(op, x, dims);
  Shape out_shape, kshape, kstride, rshape, rstride;
  for (std::int64_t d = 0; d < x.dim(); ++d) {
    if (red_mask[d]) {
      rshape.push_back(x.shape()[d]);
      rstride.push_back(x.strides()[d]);
      if (keepdim) out_shape.push_back(1);
    } else {
      kshape.push_back(x.shape()[d]);
      kstride.push_back(x.strides()[d]);
      out_shape.push_back(x.shape()[d]);
    }
  }
  const std::int64_t nout = numel_of(kshape), R = numel_of(rshape);
  if (R == 0 && nout > 0 && (red == kMax || red == kMin || red == kArgmax || red == kArgmin))
    throw IndexError(std::string("gltensor::") + op + ": cannot reduce over zero elements (input shape " +
                     to_string(x.shape()) + ")");
  Tensor out = alloc(dev, out_shape, out_dtype, op);
  if (nout == 0) return out;
  collapse(kshape, kstride);
  collapse(rshape, rstride);
  if (R > 0 && reduce_rows(dev, red, post, x, out, kshape, kstride, rshape, rstride)) return out;
  const std::uint32_t lx = R >= 256 ? 256 : 64;
  // Two passes when few outputs share a long reduction.
  std::int64_t G = 1;
  if (R > 8192) G = std::min<std::int64_t>((R + 4095) / 4096, std::max<std::int64_t>(1, 2048 / nout));
  const std::int64_t chunk = (R + G - 1) / G;

  auto header = [&](int stage) {
    std::string h = "#define RED " + std::to_string(red) + "\n#define KD " + std::to_string(kshape.size()) +
                    "\n#define RD " + std::to_string(rshape.size()) + "\n#define STAGE " + std::to_string(stage) + "\n";
    h += operand_glsl(0, out_dtype, natural_ct(out_dtype), true);
    h += operand_glsl(1, x.dtype(), CT::f32, false);
    return h;
  };
  auto set_uniforms = [&](const Program& p) {
    glProgramUniform1ui(p.id, p.loc("u_nout"), static_cast<GLuint>(nout));
    glProgramUniform1ui(p.id, p.loc("u_R"), static_cast<GLuint>(R));
    glProgramUniform1ui(p.id, p.loc("u_chunk"), static_cast<GLuint>(chunk));
    glProgramUniform1ui(p.id, p.loc("u_G"), static_cast<GLuint>(G));
    auto ks = u32(kshape), kt = u32(kstride), rs = u32(rshape), rt = u32(rstride);
    glProgramUniform1uiv(p.id, p.loc("u_kshape"), static_cast<GLsizei>(ks.size()), ks.data());
    glProgramUniform1uiv(p.id, p.loc("u_kstride"), static_cast<GLsizei>(kt.size()), kt.data());
    glProgramUniform1uiv(p.id, p.loc("u_rshape"), static_cast<GLsizei>(rs.size()), rs.data());
    glProgramUniform1uiv(p.id, p.loc("u_rstride"), static_cast<GLsizei>(rt.size()), rt.data());
    glProgramUniform1ui(p.id, p.loc("u_in_off"), static_cast<GLuint>(x.offset()));
    glProgramUniform1ui(p.id, p.loc("u_out_off"), 0);
    glProgramUniform1f(p.id, p.loc("u_correction"), static_cast<float>(correction));
    glProgramUniform1i(p.id, p.loc("u_post"), post);
  };
  Storage* in = x.impl()->storage.get();
  Storage* o = out.impl()->storage.get();
  std::uint32_t gx, gy;
  if (G == 1) {
    const Program& p = dev.programs.get("reduce.comp", header(0), lx);
    set_uniforms(p);
    BufferUse uses[] = {{o, true}, {in, false}, {o, true}};  // binding 2 unused in stage 0
    grid_for(dev, static_cast<std::uint64_t>(nout), gx, gy);
    dev.dispatch(p, gx, gy, 1, uses);
    return out;
  }
  Tensor states = alloc(dev, {nout * G * 4}, DType::f32, op);
  Storage* s = states.impl()->storage.get();
  {
    const Program& p = dev.programs.get("reduce.comp", header(1), lx);
    set_uniforms(p);
    BufferUse uses[] = {{o, false}, {in, false}, {s, true}};
    grid_for(dev, static_cast<std::uint64_t>(nout * G), gx, gy);
    dev.dispatch(p, gx, gy, 1, uses);
  }
  {
    const Program& p = dev.programs.get("reduce.comp", header(2), 64);
    set_uniforms(p);
    BufferUse uses[] = {{o, true}, {in, false}, {s, false}};
    grid_for(dev, static_cast<std::uint64_t>(nout), gx, gy);
    dev.dispatch(p, gx, gy, 1, uses);
  }
  return out;
}

DType float_result(DType d) { return is_floating(d) ? d : DType::f32; }
DType sum_result(DType d) { return is_floating(d) ? d : DType::i32; }

Tensor arg_reduce(const char* op, Red red, const Tensor& x, std::int64_t dim, bool keepdim) {
  check_defined(op, x);
  if (dim == kAllDims) {
    Tensor flat = x.reshape({-1});
    Tensor r = reduce(op, red, flat, {0}, false, DType::i32);
    if (keepdim) return r.reshape(Shape(static_cast<std::size_t>(x.dim()), 1));
    return r;
  }
  return reduce(op, red, x, {dim}, keepdim, DType::i32);
}

// Shape of x with the reduced dims kept as size 1.
Shape keep_shape(const Tensor& x, const Dims& dims) {
  const auto red = reduced_mask("reduce", x, dims);
  Shape s = x.shape();
  for (std::size_t i = 0; i < s.size(); ++i)
    if (red[i]) s[i] = 1;
  return s;
}

// Records y = reduction(x) with backward g -> f(g reshaped to keepdim shape, x, y keepdim).
template <typename F>
Tensor reduce_node(const Tensor& x, Tensor y, const Dims& dims, const char* name, F f) {
  if (!autograd::any_requires_grad({&x})) return y;
  const Shape ks = keep_shape(x, dims);
  const Tensor xd = detach(x), yk = detach(y).reshape(ks);
  autograd::record(
      y, {x}, [=](const Tensor& g) { return std::vector<Tensor>{f(g.reshape(ks).expand(xd.shape()), xd, yk)}; }, name);
  return y;
}

std::int64_t reduced_count(const Tensor& x, const Dims& dims) {
  const auto red = reduced_mask("reduce", x, dims);
  std::int64_t n = 1;
  for (std::size_t i = 0; i < red.size(); ++i)
    if (red[i]) n *= x.shape()[i];
  return n;
}

}  // namespace

Tensor sum(const Tensor& x, const Dims& d, bool k) {
  check_defined("sum", x);
  return reduce_node(x, reduce("sum", kSum, x, d, k, sum_result(x.dtype())), d, "sum",
                     [](const Tensor& g, const Tensor&, const Tensor&) { return g; });
}
Tensor mean(const Tensor& x, const Dims& d, bool k) {
  check_defined("mean", x);
  const double n = static_cast<double>(reduced_count(x, d));
  return reduce_node(x, reduce("mean", kSum, x, d, k, float_result(x.dtype()), 0, 1), d, "mean",
                     [n](const Tensor& g, const Tensor&, const Tensor&) { return div(g, n); });
}
Tensor prod(const Tensor& x, const Dims& d, bool k) {
  check_defined("prod", x);
  Tensor y = reduce("prod", kProd, x, d, k, sum_result(x.dtype()));
  grad_unsupported("prod", {&x}, y);
  return y;
}
static Tensor extreme_grad(const Tensor& g, const Tensor& x, const Tensor& yk, const Dims& d) {
  Tensor mask = eq(x, yk);
  return where(mask, div(g, sum(mask.to(DType::f32), d, true)), 0.0);
}
Tensor amax(const Tensor& x, const Dims& d, bool k) {
  check_defined("amax", x);
  return reduce_node(x, reduce("amax", kMax, x, d, k, x.dtype()), d, "amax",
                     [d](const Tensor& g, const Tensor& xd, const Tensor& yk) { return extreme_grad(g, xd, yk, d); });
}
Tensor amin(const Tensor& x, const Dims& d, bool k) {
  check_defined("amin", x);
  return reduce_node(x, reduce("amin", kMin, x, d, k, x.dtype()), d, "amin",
                     [d](const Tensor& g, const Tensor& xd, const Tensor& yk) { return extreme_grad(g, xd, yk, d); });
}
Tensor argmax(const Tensor& x, std::int64_t dim, bool k) { return arg_reduce("argmax", kArgmax, x, dim, k); }
Tensor argmin(const Tensor& x, std::int64_t dim, bool k) { return arg_reduce("argmin", kArgmin, x, dim, k); }
Tensor var(const Tensor& x, const Dims& d, double c, bool k) {
  check_defined("var", x);
  const double n = static_cast<double>(reduced_count(x, d));
  return reduce_node(x, reduce("var", kVar, x, d, k, float_result(x.dtype()), c, 0), d, "var",
                     [n, c, d](const Tensor& g, const Tensor& xd, const Tensor&) {
                       NoGradGuard ng;
                       Tensor m = mean(xd, d, true);
                       return mul(g, mul(sub(xd, m), 2.0 / std::max(n - c, 0.0)));
                     });
}
Tensor std(const Tensor& x, const Dims& d, double c, bool k) {
  check_defined("std", x);
  const double n = static_cast<double>(reduced_count(x, d));
  return reduce_node(x, reduce("std", kVar, x, d, k, float_result(x.dtype()), c, 2), d, "std",
                     [n, c, d](const Tensor& g, const Tensor& xd, const Tensor& yk) {
                       Tensor m = mean(xd, d, true);
                       return mul(div(g, yk), div(sub(xd, m), std::max(n - c, 0.0)));
                     });
}
Tensor logsumexp(const Tensor& x, const Dims& d, bool k) {
  check_defined("logsumexp", x);
  return reduce_node(x, reduce("logsumexp", kLse, x, d, k, float_result(x.dtype())), d, "logsumexp",
                     [](const Tensor& g, const Tensor& xd, const Tensor& yk) { return mul(g, exp(sub(xd, yk))); });
}
Tensor norm(const Tensor& x, double p, const Dims& d, bool k) {
  check_defined("norm", x);
  if (p != 1.0 && p != 2.0) throw ValueError("gltensor::norm: p must be 1 or 2, got " + std::to_string(p));
  Tensor y = reduce("norm", p == 1.0 ? kL1 : kL2, x, d, k, float_result(x.dtype()));
  if (p == 1.0)
    return reduce_node(x, y, d, "norm",
                       [](const Tensor& g, const Tensor& xd, const Tensor&) { return mul(g, sign(xd)); });
  return reduce_node(x, y, d, "norm", [](const Tensor& g, const Tensor& xd, const Tensor& yk) {
    return where(eq(yk, 0.0), 0.0, mul(g, div(xd, yk)));
  });
}
Tensor all(const Tensor& x, const Dims& d, bool k) { return reduce("all", kAll, x, d, k, DType::bool_); }
Tensor any(const Tensor& x, const Dims& d, bool k) { return reduce("any", kAny, x, d, k, DType::bool_); }

}  // namespace gltensor

namespace gltensor {
namespace {

// Shared by softmax and cumsum: rows over every dim but `dim`, for input and output views.
struct RowLayout {
  Shape kshape, kin, kout;
  std::int64_t rows = 1, L = 1, in_step = 1, out_step = 1;
};

RowLayout row_layout(const Tensor& in, const Tensor& out, std::int64_t dim) {
  RowLayout r;
  for (std::int64_t d = 0; d < in.dim(); ++d) {
    if (d == dim) continue;
    r.kshape.push_back(in.shape()[d]);
    r.kin.push_back(in.strides()[d]);
    r.kout.push_back(out.strides()[d]);
  }
  if (r.kshape.empty()) {
    r.kshape = {1};
    r.kin = {0};
    r.kout = {0};
  }
  r.rows = numel_of(r.kshape);
  if (in.dim() > 0) {
    r.L = in.shape()[dim];
    r.in_step = in.strides()[dim];
    r.out_step = out.strides()[dim];
  }
  return r;
}

void set_rows(const Program& p, const RowLayout& r, const Tensor& in, const Tensor& out) {
  auto k = std::vector<GLuint>(r.kshape.begin(), r.kshape.end());
  auto ki = std::vector<GLuint>(r.kin.begin(), r.kin.end());
  auto ko = std::vector<GLuint>(r.kout.begin(), r.kout.end());
  glProgramUniform1ui(p.id, p.loc("u_rows"), static_cast<GLuint>(r.rows));
  glProgramUniform1ui(p.id, p.loc("u_count"), static_cast<GLuint>(r.rows));
  glProgramUniform1ui(p.id, p.loc("u_L"), static_cast<GLuint>(r.L));
  glProgramUniform1uiv(p.id, p.loc("u_kshape"), static_cast<GLsizei>(k.size()), k.data());
  glProgramUniform1uiv(p.id, p.loc("u_kstride_in"), static_cast<GLsizei>(ki.size()), ki.data());
  glProgramUniform1uiv(p.id, p.loc("u_kstride_out"), static_cast<GLsizei>(ko.size()), ko.data());
  glProgramUniform1ui(p.id, p.loc("u_in_off"), static_cast<GLuint>(in.offset()));
  glProgramUniform1ui(p.id, p.loc("u_out_off"), static_cast<GLuint>(out.offset()));
  glProgramUniform1ui(p.id, p.loc("u_in_step"), static_cast<GLuint>(r.in_step));
  glProgramUniform1ui(p.id, p.loc("u_out_step"), static_cast<GLuint>(r.out_step));
}

Tensor softmax_impl(const char* op, const Tensor& x, std::int64_t dim, bool log) {
  check_defined(op, x);
  DeviceImpl& dev = dev_of(x);
  Enter guard(dev, op);
  dim = wrap_dim(op, dim, x.dim());
  const DType od = float_result(x.dtype());
  Tensor out = alloc(dev, x.shape(), od, op);
  if (out.numel() == 0) return out;
  const RowLayout r = row_layout(x, out, dim);
  std::string h = "#define KD " + std::to_string(r.kshape.size()) + "\n" + (log ? "#define LOG 1\n" : "");
  const std::uint32_t local = r.L >= 256 ? 256 : 64;
  // Row in registers (ROW_QUADS): f32 rows contiguous, starting on 4-element boundaries, at most
  // 8 quads per invocation.
  auto quad_rows = [&](const Tensor& t, const Shape& kstrides, std::int64_t step) {
    if (t.dtype() != DType::f32 || step != 1 || t.offset() % 4) return false;
    for (std::int64_t st : kstrides)
      if (st % 4) return false;
    return true;
  };
  const std::int64_t nq = (r.L + 4 * local - 1) / (4 * local);
  const bool row_quads =
      r.L % 4 == 0 && nq <= 8 && quad_rows(x, r.kin, r.in_step) && quad_rows(out, r.kout, r.out_step);
  if (row_quads) {
    if (dev.subgroup_arithmetic())
      h = "#extension GL_KHR_shader_subgroup_basic : require\n#extension GL_KHR_shader_subgroup_arithmetic : require\n"
          "#define SUBGROUP 1\n" +
          h;
    h += "#define ROW_QUADS 1\n#define NQ " + std::to_string(nq) + "u\n" +
         operand_glsl_vec4(0, DType::f32, CT::f32, true) + operand_glsl_vec4(1, DType::f32, CT::f32, false);
  } else {
    h += operand_glsl(0, od, CT::f32, true) + operand_glsl(1, x.dtype(), CT::f32, false);
  }
  const Program& p = dev.programs.get("softmax.comp", h, local);
  set_rows(p, r, x, out);
  std::uint32_t gx, gy;
  grid_for(dev, static_cast<std::uint64_t>(r.rows), gx, gy);
  BufferUse uses[] = {{out.impl()->storage.get(), true}, {x.impl()->storage.get(), false}};
  dev.dispatch(p, gx, gy, 1, uses);
  return out;
}

}  // namespace

Tensor softmax(const Tensor& x, std::int64_t dim) {
  Tensor y = softmax_impl("softmax", x, dim, false);
  if (autograd::any_requires_grad({&x})) {
    const Tensor yd = detach(y);
    autograd::record(
        y, {x},
        [yd, dim](const Tensor& g) { return std::vector<Tensor>{mul(yd, sub(g, sum(mul(g, yd), {dim}, true)))}; },
        "softmax");
  }
  return y;
}
Tensor log_softmax(const Tensor& x, std::int64_t dim) {
  Tensor y = softmax_impl("log_softmax", x, dim, true);
  if (autograd::any_requires_grad({&x})) {
    const Tensor yd = detach(y);
    autograd::record(
        y, {x}, [yd, dim](const Tensor& g) { return std::vector<Tensor>{sub(g, mul(exp(yd), sum(g, {dim}, true)))}; },
        "log_softmax");
  }
  return y;
}

Tensor cumsum(const Tensor& x, std::int64_t dim) {
  check_defined("cumsum", x);
  DeviceImpl& dev = dev_of(x);
  Enter guard(dev, "cumsum");
  dim = wrap_dim("cumsum", dim, x.dim());
  const DType od = sum_result(x.dtype());
  Tensor out = alloc(dev, x.shape(), od, "cumsum");
  if (out.numel() == 0) return out;
  const RowLayout r = row_layout(x, out, dim);
  std::string h = "#define KD " + std::to_string(r.kshape.size()) + "\n";
  h += operand_glsl(0, od, natural_ct(od), true) + operand_glsl(1, x.dtype(), natural_ct(od), false);
  const Program& p = dev.programs.get("scan.comp", h, 64);
  set_rows(p, r, x, out);
  BufferUse uses[] = {{out.impl()->storage.get(), true}, {x.impl()->storage.get(), false}};
  dev.dispatch_1d(p, static_cast<std::uint64_t>(r.rows), uses);
  if (autograd::any_requires_grad({&x}))
    autograd::record(
        out, {x}, [dim](const Tensor& g) { return std::vector<Tensor>{flip(cumsum(flip(g, {dim}), dim), {dim})}; },
        "cumsum");
  return out;
}

}  // namespace gltensor
