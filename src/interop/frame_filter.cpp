// interop: frame filter chains (gltensor/interop.hpp, FrameFilter): conv2d stages with fused
// elementwise steps, one dispatch per conv2d (frame_stage).
#include <string>

#include "gltensor/autograd.hpp"
#include "gltensor/interop.hpp"
#include "gltensor/ops.hpp"
#include "interop/frame_stage.hpp"
#include "ops/activation.hpp"
#include "runtime/guard.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor::interop {

namespace {
constexpr const char* kBuild = "gltensor::interop::FrameFilter: ";

// An elementwise op before the first conv2d (its channel count known only then).
struct PendingOp {
  bool affine;
  Epilogue act;
  std::vector<double> s, b;  // affine: one value (scalar) or one per channel
};

std::string shape_str(const Tensor& t) { return to_string(t.shape()); }
}  // namespace

struct FrameFilter::Impl {
  Device dev;
  bool f16 = false;
  struct Stage {
    Tensor w, b;  // f32 copies (b padded to whole vec4s, viewed as [C_out])
    Conv2dOptions o;
    std::vector<detail::FrameStep> pre, post;
  };
  std::vector<Stage> stages;
  std::vector<PendingOp> pending;  // before the first conv2d
  std::vector<Tensor> mids;        // intermediates of the last run's sizes

  std::int64_t channels() const { return stages.empty() ? -1 : stages.back().w.size(0); }

  // An elementwise op: into the last stage's epilogue, or pending before the first conv2d.
  void elementwise(PendingOp op) {
    if (op.affine && op.s.size() > 1 && !stages.empty() && static_cast<std::int64_t>(op.s.size()) != channels())
      throw ShapeError(std::string(kBuild) + "a per-channel vector of " + std::to_string(op.s.size()) +
                       " values after a conv2d of " + std::to_string(channels()) + " output channels");
    if (stages.empty()) {
      pending.push_back(std::move(op));
      return;
    }
    apply(stages.back().post, op, channels());
  }
  static void apply(std::vector<detail::FrameStep>& steps, const PendingOp& op, std::int64_t C) {
    if (!op.affine) {
      steps.push_back(detail::FrameStep{false, op.act, {}, {}});
      return;
    }
    const auto expand = [&](const std::vector<double>& v) {
      return v.size() == 1 ? std::vector<double>(static_cast<std::size_t>(C), v[0]) : v;
    };
    detail::push_affine(steps, expand(op.s), expand(op.b));
  }
};

FrameFilter::FrameFilter(const Device& dev, Intermediates mids) : impl_(std::make_unique<Impl>()) {
  if (!dev.valid()) throw ValueError(std::string(kBuild) + "invalid Device handle");
  impl_->dev = dev;
  impl_->f16 = mids == Intermediates::f16 || (mids == Intermediates::automatic && dev.impl()->fp16_arithmetic());
}
FrameFilter::~FrameFilter() = default;
FrameFilter::FrameFilter(FrameFilter&&) noexcept = default;
FrameFilter& FrameFilter::operator=(FrameFilter&&) noexcept = default;

FrameFilter& FrameFilter::conv2d(const Tensor& weight, const Tensor& bias, const Conv2dOptions& o) {
  const char* op = "interop::FrameFilter::conv2d";
  detail::check_defined(op, weight, "weight");
  Impl& m = *impl_;
  if (&detail::dev_of(weight) != m.dev.impl().get() ||
      (bias.defined() && &detail::dev_of(bias) != &detail::dev_of(weight)))
    throw DeviceError(std::string(kBuild) + "conv2d: weight or bias on another device than the filter's");
  if (!is_floating(weight.dtype()) || (bias.defined() && !is_floating(bias.dtype())))
    throw DTypeError(std::string(kBuild) + "conv2d: weight " + dtype_name(weight.dtype()) +
                     (bias.defined() ? std::string(", bias ") + dtype_name(bias.dtype()) : std::string()) +
                     " (floating dtypes)");
  if (weight.dim() != 4 || weight.numel() == 0)
    throw ShapeError(std::string(kBuild) + "conv2d: weight " + shape_str(weight) + " is not [C_out, C_in, KH, KW]");
  const std::int64_t co = weight.size(0), ci = weight.size(1);
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != co))
    throw ShapeError(std::string(kBuild) + "conv2d: bias " + shape_str(bias) + " for weight " + shape_str(weight) +
                     " (expects [" + std::to_string(co) + "])");
  if (o.groups != 1) throw ValueError(std::string(kBuild) + "conv2d: groups " + std::to_string(o.groups) + " (only 1)");
  for (int i = 0; i < 2; ++i)
    if (o.stride[i] < 1 || o.dilation[i] < 1)
      throw ValueError(std::string(kBuild) + "conv2d: stride and dilation must be >= 1");
  for (std::int64_t p : o.padding)
    if (p < 0) throw ValueError(std::string(kBuild) + "conv2d: padding must be >= 0");
  if (!m.stages.empty() && ci != m.channels())
    throw ShapeError(std::string(kBuild) + "conv2d: weight " + shape_str(weight) + " takes " + std::to_string(ci) +
                     " channels, the conv2d before gives " + std::to_string(m.channels()));
  for (const PendingOp& p : m.pending)
    if (m.stages.empty() && p.affine && p.s.size() > 1 && static_cast<std::int64_t>(p.s.size()) != ci)
      throw ShapeError(std::string(kBuild) + "a per-channel vector of " + std::to_string(p.s.size()) +
                       " values before a conv2d of " + std::to_string(ci) + " input channels (weight " +
                       shape_str(weight) + ")");
  NoGradGuard no_grad;
  Impl::Stage st;
  // f32 copies: f16 and bf16 values widen exactly, once, so that every run does the f32 kernel's
  // work on the same values (f16 weights read in the kernel cost a conversion per weight and
  // invocation: 2.3x the f32 frame's time on llvmpipe).
  st.w = weight.to(DType::f32).contiguous().clone();
  st.o = o;
  if (bias.defined()) {  // whole vec4s, so that it can be bound as a uniform block
    Tensor padded = zeros(m.dev, {(co + 3) / 4 * 4});
    st.b = padded.narrow(0, 0, co);
    st.b.copy_(bias.to(DType::f32));
  }
  if (m.stages.empty())
    for (const PendingOp& p : m.pending) Impl::apply(st.pre, p, ci);
  m.pending.clear();
  m.stages.push_back(std::move(st));
  return *this;
}

FrameFilter& FrameFilter::activation(const Epilogue& act) {
  detail::check_epilogue("interop::FrameFilter::activation", act);
  detail::check_epilogue_act_only("interop::FrameFilter::activation", act);
  if (act.act != Activation::none) impl_->elementwise({false, act, {}, {}});
  return *this;
}
FrameFilter& FrameFilter::mul(double s) {
  impl_->elementwise({true, {}, {s}, {0.0}});
  return *this;
}
FrameFilter& FrameFilter::add(double b) {
  impl_->elementwise({true, {}, {1.0}, {b}});
  return *this;
}
FrameFilter& FrameFilter::mul(const std::vector<float>& s) {
  if (s.empty()) throw ShapeError(std::string(kBuild) + "mul: an empty per-channel vector");
  impl_->elementwise({true, {}, std::vector<double>(s.begin(), s.end()), std::vector<double>(s.size(), 0.0)});
  return *this;
}
FrameFilter& FrameFilter::add(const std::vector<float>& b) {
  if (b.empty()) throw ShapeError(std::string(kBuild) + "add: an empty per-channel vector");
  impl_->elementwise({true, {}, std::vector<double>(b.size(), 1.0), std::vector<double>(b.begin(), b.end())});
  return *this;
}

std::size_t FrameFilter::dispatches() const { return impl_->stages.size(); }
bool FrameFilter::f16_intermediates() const { return impl_->f16; }

void FrameFilter::run(const Texture& in, const Texture& out, const TextureTransfer& in_opt,
                      const TextureTransfer& out_opt) {
  const char* op = "interop::FrameFilter::run";
  Impl& m = *impl_;
  const std::string what = std::string("gltensor::") + op + ": ";
  if (m.stages.empty()) throw ValueError(what + "the filter has no conv2d stage");
  detail::DeviceImpl& d = *m.dev.impl();
  detail::Enter guard(d, op);
  const auto& fin = detail::format_of(op, in.internal_format, false);
  const auto& fout = detail::format_of(op, out.internal_format, true);
  const std::int64_t cin = in_opt.channels == 0 ? fin.channels : in_opt.channels;
  if (in_opt.channels < 0 || cin > fin.channels || cin != m.stages.front().w.size(1))
    throw ShapeError(what + std::to_string(in_opt.channels) + " input channels of a " + fin.name +
                     " texture for a first conv2d of weight " + shape_str(m.stages.front().w) +
                     " (TextureTransfer::channels: 0 = the format's, or C_in)");
  if (m.channels() > fout.channels)
    throw ShapeError(what + "the last conv2d gives " + std::to_string(m.channels()) + " channels, a " + fout.name +
                     " texture holds " + std::to_string(fout.channels));
  detail::check_texture(op, d, in, fin, false);
  detail::check_texture(op, d, out, fout, true);
  // Sizes through the chain.
  std::vector<std::array<std::int64_t, 2>> hw{{in.height, in.width}};
  for (const Impl::Stage& st : m.stages) {
    const auto& o = st.o;
    const std::int64_t h = detail::conv_out_size(hw.back()[0], o.padding[0], o.padding[2], o.dilation[0], st.w.size(2),
                                                 o.stride[0]),
                       w = detail::conv_out_size(hw.back()[1], o.padding[1], o.padding[3], o.dilation[1], st.w.size(3),
                                                 o.stride[1]);
    if (h <= 0 || w <= 0)
      throw ShapeError(what + "conv2d stage " + std::to_string(hw.size()) + " (weight " + shape_str(st.w) +
                       ") gives an empty " + std::to_string(w) + " x " + std::to_string(h) + " output from " +
                       std::to_string(hw.back()[1]) + " x " + std::to_string(hw.back()[0]) + " (W x H)");
    hw.push_back({h, w});
  }
  if (hw.back()[0] != out.height || hw.back()[1] != out.width)
    throw ShapeError(what + "a " + std::to_string(in.width) + " x " + std::to_string(in.height) + " input gives " +
                     std::to_string(hw.back()[1]) + " x " + std::to_string(hw.back()[0]) +
                     " (W x H), the output texture is " + std::to_string(out.width) + " x " +
                     std::to_string(out.height));
  // Intermediates (kept between runs of the same sizes).
  const std::size_t n = m.stages.size();
  m.mids.resize(n - 1);
  for (std::size_t i = 0; i + 1 < n; ++i) {
    const std::int64_t words = detail::mid_words(hw[i + 1][0], hw[i + 1][1], m.stages[i].w.size(0), m.f16);
    if (!m.mids[i].defined() || m.mids[i].numel() != words) m.mids[i] = detail::alloc(d, {words}, DType::i32, op);
  }
  std::vector<detail::FrameStep> pre;
  detail::push_affine(pre, std::vector<double>(in_opt.scale.begin(), in_opt.scale.begin() + cin),
                      std::vector<double>(in_opt.bias.begin(), in_opt.bias.begin() + cin));
  for (const detail::FrameStep& s : m.stages.front().pre) {
    if (s.affine)
      detail::push_affine(pre, std::vector<double>(s.s.begin(), s.s.end()),
                          std::vector<double>(s.b.begin(), s.b.end()));
    else
      pre.push_back(s);
  }
  std::vector<detail::FrameStep> last_post = m.stages.back().post;
  const std::int64_t cout = m.channels();
  detail::push_affine(last_post, std::vector<double>(out_opt.scale.begin(), out_opt.scale.begin() + cout),
                      std::vector<double>(out_opt.bias.begin(), out_opt.bias.begin() + cout));
  const std::vector<detail::FrameStep> none;
  for (std::size_t i = 0; i < n; ++i) {
    const Impl::Stage& st = m.stages[i];
    detail::FrameEnd src, dst;
    if (i == 0)
      src = {&in, &fin, in_opt.origin == Origin::bottom_left, nullptr, false, in.height, in.width, cin};
    else
      src = {nullptr, nullptr, false, &m.mids[i - 1], m.f16, hw[i][0], hw[i][1], st.w.size(1)};
    if (i + 1 == n)
      dst = {&out, &fout, out_opt.origin == Origin::bottom_left, nullptr, false, out.height, out.width, cout};
    else
      dst = {nullptr, nullptr, false, &m.mids[i], m.f16, hw[i + 1][0], hw[i + 1][1], st.w.size(0)};
    detail::run_frame_stage(d, op, st.w, st.b, st.o, i == 0 ? pre : none, i + 1 == n ? last_post : st.post, src, dst);
  }
}

}  // namespace gltensor::interop
