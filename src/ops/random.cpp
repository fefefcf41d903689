// rand / randn / bernoulli / dropout on random.comp (Philox4x32-10).
#include "gltensor/random.hpp"

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
// adds to the offset's high word.
Tensor draw(const char* op, DeviceImpl& dev, const Shape& shape, DType dtype, const char* dist, double a, double b,
            Generator& gen, const Tensor* x = nullptr, const Tensor* offset = nullptr) {
  Launch launch(dev, op);
  Tensor out = alloc(dev, shape, dtype, op);
  const std::int64_t n = out.numel();
  const std::uint64_t off = gen.next_offset();
  if (n == 0) return out;
  RandomVariant v;
  v.dist = dist, v.out = dtype, v.input = x != nullptr, v.device_offset = offset != nullptr;
  if (x) v.in = x->dtype();
  launch.program(v.kFile, v.defines(), {256}).write(out);
  if (x) launch.read(*x);
  if (offset) launch.read(*offset);
  // Philox4x32-10: 10 rounds (unrolled or not).
  launch.params(RandomParams{n, gen.seed(), off, a, b}).loop_iterations(16).invocations(static_cast<std::uint64_t>(n));
  return out;
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
  const Tensor c = x.contiguous();
  const DType od = is_floating(x.dtype()) ? x.dtype() : DType::f32;
  // random.comp reads element e of operand 1 (and element 0 of operand 2): offset 0.
  const Tensor src = c.offset() == 0 ? c : c.clone();
  if (!offset) return draw("dropout", dev_of(x), x.shape(), od, "dist_dropout", p, 0, gen, &src);
  const Tensor off = offset->offset() == 0 ? *offset : offset->clone();
  return draw("dropout", dev_of(x), x.shape(), od, "dist_dropout", p, 0, gen, &src, &off);
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
