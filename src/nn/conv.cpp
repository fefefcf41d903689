// conv2d (im2col + matmul, explicit backward) and conv_transpose2d (matmul + col2im).
#include "autograd/grad_formulas.hpp"
#include "gltensor/autograd.hpp"
#include "gltensor/indexing.hpp"
#include "gltensor/linalg.hpp"
#include "gltensor/nn_functional.hpp"
#include "gltensor/ops.hpp"
#include "gltensor/reduce.hpp"
#include "runtime/codegen.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {
using namespace detail;

namespace {

struct Geometry {
  std::int64_t N, C, H, W, KH, KW, OH, OW;
  Conv2dOptions o;
};

void set_geometry(const Program& p, const Geometry& g) {
  auto i = [&](const char* n, std::int64_t v) { glProgramUniform1i(p.id, p.loc(n), static_cast<GLint>(v)); };
  i("u_N", g.N), i("u_C", g.C), i("u_H", g.H), i("u_W", g.W), i("u_KH", g.KH), i("u_KW", g.KW);
  i("u_OH", g.OH), i("u_OW", g.OW), i("u_sh", g.o.stride[0]), i("u_sw", g.o.stride[1]);
  i("u_pt", g.o.padding[0]), i("u_pl", g.o.padding[1]), i("u_dh", g.o.dilation[0]), i("u_dw", g.o.dilation[1]);
}

// image [N, C, H, W] (strided) -> colsT [C*KH*KW, N*OH*OW] (the transposed columns matrix)
Tensor im2col(const Tensor& img, const Geometry& g) {
  DeviceImpl& dev = dev_of(img);
  Tensor cols = alloc(dev, {g.C * g.KH * g.KW, g.N * g.OH * g.OW}, DType::f32, "conv2d");
  if (cols.numel() == 0) return cols;
  // QUADS: four positions per invocation and one 128-bit store where a plane's positions come in
  // whole quads.
  const std::int64_t per = (g.OH * g.OW) % 4 == 0 ? 4 : 1;
  std::string h = "#define IM2COL 1\n" +
                  (per == 4 ? "#define QUADS 1\n" + operand_glsl_vec4(0, DType::f32, CT::f32, true)
                            : operand_glsl(0, DType::f32, CT::f32, true)) +
                  operand_glsl(1, img.dtype(), CT::f32, false);
  const Program& p = dev.programs.get("conv.comp", h, 256);
  set_geometry(p, g);
  std::vector<GLuint> st(img.strides().begin(), img.strides().end());
  glProgramUniform1uiv(p.id, p.loc("u_img_stride"), 4, st.data());
  glProgramUniform1ui(p.id, p.loc("u_img_off"), static_cast<GLuint>(img.offset()));
  BufferUse uses[] = {{cols.impl()->storage.get(), true}, {img.impl()->storage.get(), false}};
  // Grid: positions of one image along x, images along y, rows of colsT along z (split into
  // several dispatches where y or z exceed the device's grid).
  const std::uint64_t gx = static_cast<std::uint64_t>((g.OH * g.OW / per + 255) / 256);
  if (gx > dev.max_groups(0))
    throw LimitError("gltensor::conv2d: " + std::to_string(g.OH * g.OW) +
                     " output positions per image need more workgroups than the device allows");
  const std::int64_t ymax = dev.max_groups(1), zmax = dev.max_groups(2), K = g.C * g.KH * g.KW;
  for (std::int64_t n0 = 0; n0 < g.N; n0 += ymax)
    for (std::int64_t k0 = 0; k0 < K; k0 += zmax) {
      glProgramUniform1ui(p.id, p.loc("u_nbase"), static_cast<GLuint>(n0));
      glProgramUniform1ui(p.id, p.loc("u_kbase"), static_cast<GLuint>(k0));
      dev.dispatch(p, static_cast<std::uint32_t>(gx), static_cast<std::uint32_t>(std::min(ymax, g.N - n0)),
                   static_cast<std::uint32_t>(std::min(zmax, K - k0)), uses);
    }
  return cols;
}

// cols [N*OH*OW, C*KH*KW] (strided 2-D view) -> image [N, C, H, W]
Tensor col2im(const Tensor& cols, const Geometry& g) {
  DeviceImpl& dev = dev_of(cols);
  Tensor img = alloc(dev, {g.N, g.C, g.H, g.W}, DType::f32, "conv2d");
  if (img.numel() == 0) return img;
  std::string h = operand_glsl(0, DType::f32, CT::f32, true) + operand_glsl(1, cols.dtype(), CT::f32, false);
  const Program& p = dev.programs.get("conv.comp", h, 256);
  set_geometry(p, g);
  glProgramUniform1ui(p.id, p.loc("u_col_rs"), static_cast<GLuint>(cols.strides()[0]));
  glProgramUniform1ui(p.id, p.loc("u_col_cs"), static_cast<GLuint>(cols.strides()[1]));
  glProgramUniform1ui(p.id, p.loc("u_col_off"), static_cast<GLuint>(cols.offset()));
  glProgramUniform1ui(p.id, p.loc("u_count"), static_cast<GLuint>(img.numel()));
  BufferUse uses[] = {{img.impl()->storage.get(), true}, {cols.impl()->storage.get(), false}};
  dev.dispatch_1d(p, static_cast<std::uint64_t>(img.numel()), uses);
  return img;
}

void check_options(const char* op, const Conv2dOptions& o) {
  for (auto s : o.stride)
    if (s <= 0) throw ValueError(std::string("gltensor::") + op + ": stride must be positive");
  for (auto d : o.dilation)
    if (d <= 0) throw ValueError(std::string("gltensor::") + op + ": dilation must be positive");
  for (auto p : o.padding)
    if (p < 0) throw ValueError(std::string("gltensor::") + op + ": padding must be >= 0");
  if (o.groups <= 0) throw ValueError(std::string("gltensor::") + op + ": groups must be positive");
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dOptions& o) {
  return conv2d(x, w, bias, o, Epilogue());
}

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dOptions& o, const Epilogue& epi) {
  const char* op = "conv2d";
  check_same_device(op, {&x, &w});
  check_options(op, o);
  if (x.dim() != 4 || w.dim() != 4)
    throw ShapeError("gltensor::conv2d: expects x [N, C, H, W] and weight [O, C/groups, KH, KW], got " +
                     to_string(x.shape()) + " and " + to_string(w.shape()));
  const std::int64_t G = o.groups, C = x.size(1), O = w.size(0);
  if (C % G != 0 || O % G != 0 || w.size(1) != C / G)
    throw ShapeError("gltensor::conv2d: input " + to_string(x.shape()) + " and weight " + to_string(w.shape()) +
                     " do not match with groups = " + std::to_string(G));
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != O))
    throw ShapeError("gltensor::conv2d: bias " + to_string(bias.shape()) + " must be [" + std::to_string(O) + "]");
  Geometry g{x.size(0), C / G, x.size(2), x.size(3), w.size(2), w.size(3), 0, 0, o};
  const std::int64_t eh = o.dilation[0] * (g.KH - 1) + 1, ew = o.dilation[1] * (g.KW - 1) + 1;
  const std::int64_t ph = g.H + o.padding[0] + o.padding[2], pw = g.W + o.padding[1] + o.padding[3];
  if (eh > ph || ew > pw)
    throw ShapeError("gltensor::conv2d: kernel " + to_string({g.KH, g.KW}) + " (dilated " + to_string({eh, ew}) +
                     ") is larger than the padded input " + to_string({ph, pw}));
  g.OH = (ph - eh) / o.stride[0] + 1;
  g.OW = (pw - ew) / o.stride[1] + 1;
  const std::int64_t Og = O / G, K = g.C * g.KH * g.KW;
  const bool grad = autograd::any_requires_grad({&x, &w, &bias});
  // The activation runs in the matmul kernel where it can (no gradients), else after it.
  const Activation act = grad ? Activation::none : epi.kernel_activation();
  const Epilogue after = act != Activation::none ? Epilogue() : epi;
  Tensor y;
  std::vector<Tensor> saved_cols;
  {
    NoGradGuard ng;
    Tensor out;
    if (G == 1) {
      // [O, K] @ colsT [K, N*OH*OW] (+ bias per row): M = output channels, N = positions,
      // both operands contiguous along K / N. Where the quad-load matmul kernel applies it
      // writes NCHW directly (column groups of OH*OW as the outer dim); otherwise the result
      // [O, N, OH, OW] is copied to NCHW.
      // A 1x1, stride-1, unpadded convolution of one image is the matmul itself: the image
      // [C, H*W] is already the columns matrix.
      const bool pointwise = g.KH == 1 && g.KW == 1 && o.stride[0] == 1 && o.stride[1] == 1 &&
                             o.padding == std::array<std::int64_t, 4>{0, 0, 0, 0} && g.N == 1 &&
                             x.dtype() == DType::f32 && x.is_contiguous();
      Tensor cols = pointwise ? x.view({g.C, g.H * g.W}) : im2col(x, g);
      Tensor wm = w.reshape({O, K});
      Tensor b = bias.defined() ? bias.view({O, 1}) : Tensor();
      Tensor r = matmul_split_columns(wm, cols, b, g.OH * g.OW, act);
      if (r.defined())
        r = r.view({g.N, O, g.OH, g.OW});
      else
        r = matmul_fused(wm, cols, b, 1.0, 1.0, act).view({O, g.N, g.OH, g.OW}).permute({1, 0, 2, 3});
      out = r.contiguous();
      saved_cols.push_back(cols);
    } else if (Og == 1 && g.C == 1 && !grad) {
      // Depthwise (one input and one output channel per group): a sum over the KH x KW taps of
      // shifted strided views of the padded input times the tap's per-channel weight, one
      // multiply-add each (a batched matmul with one-row tiles or a reduction over K is far
      // slower on every device tried).
      Tensor xp = pad(x, {o.padding[1], o.padding[3], o.padding[0], o.padding[2]});
      Tensor acc = bias.defined() ? bias.view({1, O, 1, 1}) : zeros(x.device(), {1, O, 1, 1});
      for (std::int64_t kh = 0; kh < g.KH; ++kh)
        for (std::int64_t kw = 0; kw < g.KW; ++kw) {
          const std::int64_t h0 = kh * o.dilation[0], w0 = kw * o.dilation[1];
          Tensor xs = xp.slice(2, h0, h0 + (g.OH - 1) * o.stride[0] + 1, o.stride[0])
                          .slice(3, w0, w0 + (g.OW - 1) * o.stride[1] + 1, o.stride[1]);
          acc = addcmul(acc, xs, w.select(3, kw).select(2, kh).view({1, O, 1, 1}));
        }
      out = act != Activation::none ? apply_epilogue(acc, Epilogue(act)) : acc;
      if (out.dtype() != DType::f32) out = out.to(DType::f32);
    } else {
      // Groups: one im2col over all channels (rows of group gi are contiguous), then one batched
      // matmul [G, Og, K] @ [G, K, N*OH*OW].
      Geometry ga = g;
      ga.C = C;
      Tensor cols = im2col(x, ga).view({G, K, g.N * g.OH * g.OW});
      Tensor r =
          matmul_fused(w.reshape({G, Og, K}), cols, bias.defined() ? bias.view({G, Og, 1}) : Tensor(), 1.0, 1.0, act);
      out = r.view({O, g.N, g.OH, g.OW}).permute({1, 0, 2, 3}).contiguous();
      for (std::int64_t gi = 0; gi < G; ++gi) saved_cols.push_back(cols.select(0, gi));
    }
    y = x.dtype() == DType::f32 ? out : out.to(x.dtype());
  }
  if (autograd::any_requires_grad({&x, &w, &bias})) {
    const Tensor wd = detach(w);
    const bool has_bias = bias.defined();
    autograd::record(
        y, {x, w, bias},
        [g, G, Og, K, wd, saved_cols, has_bias](const Tensor& gy) {
          Tensor gm = gy.permute({0, 2, 3, 1}).reshape({-1, G * Og});  // [N*OH*OW, O]
          Tensor gx = G == 1 ? Tensor() : Tensor::empty(gy.device(), {g.N, G * g.C, g.H, g.W});
          std::vector<Tensor> gws;
          for (std::int64_t gi = 0; gi < G; ++gi) {
            Tensor gmg = G == 1 ? gm : gm.narrow(1, gi * Og, Og);
            Tensor wm = (G == 1 ? wd : wd.narrow(0, gi * Og, Og)).reshape({Og, K});
            gws.push_back(matmul(gmg.t(), saved_cols[gi].t()).view({Og, g.C, g.KH, g.KW}));
            Tensor gxi = col2im(matmul(gmg, wm), g);
            if (G == 1)
              gx = gxi;
            else
              gx.narrow(1, gi * g.C, g.C).copy_(gxi);
          }
          Tensor gw = G == 1 ? gws[0] : concat(gws, 0);
          return std::vector<Tensor>{gx, gw, has_bias ? sum(gm, {0}) : Tensor()};
        },
        "conv2d");
  }
  return after.kind == Epilogue::Kind::none ? y : apply_epilogue(y, after);
}

Tensor conv_transpose2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dOptions& o,
                        std::array<std::int64_t, 2> op_pad) {
  const char* op = "conv_transpose2d";
  check_same_device(op, {&x, &w});
  check_options(op, o);
  if (x.dim() != 4 || w.dim() != 4)
    throw ShapeError(
        "gltensor::conv_transpose2d: expects x [N, Cin, H, W] and weight [Cin, Cout/groups, KH, KW], got " +
        to_string(x.shape()) + " and " + to_string(w.shape()));
  const std::int64_t G = o.groups, Cin = x.size(1);
  if (Cin != w.size(0) || Cin % G != 0)
    throw ShapeError("gltensor::conv_transpose2d: input " + to_string(x.shape()) + " and weight " +
                     to_string(w.shape()) + " do not match with groups = " + std::to_string(G));
  const std::int64_t Cg = Cin / G, Coutg = w.size(1), Cout = Coutg * G, KH = w.size(2), KW = w.size(3);
  const std::int64_t N = x.size(0), H = x.size(2), W = x.size(3);
  const std::int64_t OH =
      (H - 1) * o.stride[0] - o.padding[0] - o.padding[2] + o.dilation[0] * (KH - 1) + op_pad[0] + 1;
  const std::int64_t OW =
      (W - 1) * o.stride[1] - o.padding[1] - o.padding[3] + o.dilation[1] * (KW - 1) + op_pad[1] + 1;
  if (OH <= 0 || OW <= 0)
    throw ShapeError("gltensor::conv_transpose2d: output size " + to_string({OH, OW}) + " is empty");
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != Cout))
    throw ShapeError("gltensor::conv_transpose2d: bias " + to_string(bias.shape()) + " must be [" +
                     std::to_string(Cout) + "]");
  Tensor y;
  {
    NoGradGuard ng;
    // The transposed conv of x is the input-gradient of a conv whose output is x.
    Geometry g{N, Coutg, OH, OW, KH, KW, H, W, o};
    y = Tensor::empty(x.device(), {N, Cout, OH, OW});
    for (std::int64_t gi = 0; gi < G; ++gi) {
      Tensor xm = x.narrow(1, gi * Cg, Cg).permute({0, 2, 3, 1}).reshape({N * H * W, Cg});
      Tensor wm = w.narrow(0, gi * Cg, Cg).reshape({Cg, Coutg * KH * KW});
      y.narrow(1, gi * Coutg, Coutg).copy_(col2im(matmul(xm, wm), g));
    }
    if (bias.defined()) y = add(y, bias.view({1, Cout, 1, 1}));
  }
  grad_unsupported(op, {&x, &w, &bias}, y);
  return y;
}

}  // namespace gltensor
