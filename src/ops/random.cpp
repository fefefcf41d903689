// rand / randn / bernoulli / dropout on random.comp (Philox4x32-10).
#include "gltensor/random.hpp"

#include "gltensor/autograd.hpp"
#include "ops/data_variants.hpp"
#include "runtime/launch.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {
using namespace detail;

namespace {

// Uniforms of glsl/ops/random.comp.
struct RandomParams {
  std::int64_t count;
  std::uint64_t seed, offset;
  double a, b;
  void set(Uniforms& u) const {
    u.u32("u_count", count);
    u.uvec2("u_seed", static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
    u.uvec2("u_offset", static_cast<std::uint32_t>(offset), static_cast<std::uint32_t>(offset >> 32));
    u.f32("u_a", a);
    u.f32("u_b", b);
  }
};

// `offset` (dropout): an int32 tensor of one element at storage offset 0 whose value the kernel
// adds to the offset's high word; `saved` (with offset): an int32 [1] the kernel writes that value
// into (the dropout's backward draws its mask again from it).
Tensor draw_at(const char* op, DeviceImpl& dev, const Shape& shape, DType dtype, const char* dist, double a, double b,
               std::uint64_t seed, std::uint64_t off, const Tensor* x = nullptr, const Tensor* offset = nullptr,
               const Tensor* saved = nullptr) {
  Launch launch(dev, op);
  Tensor out = alloc(dev, shape, dtype, op);
  const std::int64_t n = out.numel();
  if (n == 0) return out;
  RandomVariant v;
  v.dist = dist, v.out = dtype, v.input = x != nullptr, v.device_offset = offset != nullptr;
  v.save_offset = saved != nullptr;
  if (x) v.in = x->dtype();
  launch.program(v.kFile, v.defines(), {256}).write(out);
  if (x) launch.read(*x);
  if (offset) launch.read(*offset);
  if (saved) launch.write(*saved);
  // Philox4x32-10: 10 rounds (unrolled or not).
  launch.params(RandomParams{n, seed, off, a, b}).loop_iterations(16).invocations(static_cast<std::uint64_t>(n));
  return out;
}

Tensor draw(const char* op, DeviceImpl& dev, const Shape& shape, DType dtype, const char* dist, double a, double b,
            Generator& gen) {
  const std::uint64_t off = gen.next_offset();
  return draw_at(op, dev, shape, dtype, dist, a, b, gen.seed(), off);
}

DeviceImpl& devref(const char* op, const Device& d) {
  if (!d.valid()) throw ValueError(std::string("gltensor::") + op + ": invalid Device handle");
  return *d.impl();
}

}  // namespace

Tensor rand(const Device& dev, const Shape& shape, Generator& gen, double low, double high, DType dtype) {
  if (!is_floating(dtype))
    throw DTypeError(std::string("gltensor::rand: needs a float dtype, got ") + dtype_name(dtype));
  return draw("rand", devref("rand", dev), shape, dtype, "dist_uniform", low, high, gen);
}

Tensor randn(const Device& dev, const Shape& shape, Generator& gen, double mean, double std, DType dtype) {
  if (!is_floating(dtype))
    throw DTypeError(std::string("gltensor::randn: needs a float dtype, got ") + dtype_name(dtype));
  if (std < 0) throw ValueError("gltensor::randn: std must be >= 0, got " + std::to_string(std));
  return draw("randn", devref("randn", dev), shape, dtype, "dist_normal", mean, std, gen);
}

Tensor bernoulli(const Device& dev, const Shape& shape, double p, Generator& gen, DType dtype) {
  if (!(p >= 0 && p <= 1)) throw ValueError("gltensor::bernoulli: p must be in [0, 1], got " + std::to_string(p));
  return draw("bernoulli", devref("bernoulli", dev), shape, dtype, "dist_bernoulli", p, 0, gen);
}

namespace {
Tensor dropout_impl(const Tensor& x, double p, Generator& gen, const Tensor* offset) {
  check_defined("dropout", x);
  if (!(p >= 0 && p < 1)) throw ValueError("gltensor::dropout: p must be in [0, 1), got " + std::to_string(p));
  if (p == 0) return x;
  const DType od = is_floating(x.dtype()) ? x.dtype() : DType::f32;
  const std::uint64_t seed = gen.seed(), off = gen.next_offset();
  Tensor out, saved;
  {
    NoGradGuard no_grad;
    const Tensor c = x.contiguous();
    // random.comp reads element e of operand 1 (and element 0 of operand 2): offset 0.
    const Tensor src = c.offset() == 0 ? c : c.clone();
    if (!offset) {
      out = draw_at("dropout", dev_of(x), x.shape(), od, "dist_dropout", p, 0, seed, off, &src);
    } else {
      const Tensor o = offset->offset() == 0 ? *offset : offset->clone();
      // The value the draw read, for the backward: the offset tensor may change before it runs.
      saved = alloc(dev_of(x), {1}, DType::i32, "dropout");
      out = draw_at("dropout", dev_of(x), x.shape(), od, "dist_dropout", p, 0, seed, off, &src, &o, &saved);
    }
  }
  // The backward draws the same mask (the same seed, offset and saved value) over the gradient:
  // grad_x = grad * mask / (1 - p), no mask kept.
  if (is_floating(x.dtype()))
    autograd::record(
        out, {x},
        [p, seed, off, saved](const Tensor& g) -> std::vector<Tensor> {
          const Tensor gc = g.contiguous();
          const Tensor src = gc.offset() == 0 ? gc : gc.clone();
          DeviceImpl& dev = dev_of(src);
          if (!saved.defined())
            return {draw_at("dropout_backward", dev, src.shape(), src.dtype(), "dist_dropout", p, 0, seed, off, &src)};
          return {draw_at("dropout_backward", dev, src.shape(), src.dtype(), "dist_dropout", p, 0, seed, off, &src,
                          &saved)};
        },
        "dropout");
  return out;
}
}  // namespace

Tensor dropout(const Tensor& x, double p, Generator& gen) { return dropout_impl(x, p, gen, nullptr); }

Tensor dropout(const Tensor& x, double p, Generator& gen, const Tensor& offset) {
  check_defined("dropout", x);
  check_defined("dropout", offset, "offset");
  check_same_device("dropout", {&x, &offset});
  if (offset.dtype() != DType::i32)
    throw DTypeError(std::string("gltensor::dropout: the device offset must be int32, got ") +
                     dtype_name(offset.dtype()));
  if (offset.numel() != 1)
    throw ShapeError("gltensor::dropout: the device offset must have one element, got shape " +
                     to_string(offset.shape()));
  return dropout_impl(x, p, gen, &offset);
}

}  // namespace gltensor
