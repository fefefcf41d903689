// Sampling tokens from logits on the GPU (include/gltensor/sampling.hpp): one dispatch of
// glsl/nn/sample.comp, one workgroup per row.
#include "gltensor/sampling.hpp"

#include <cmath>

#include "gltensor/autograd.hpp"
#include "gltensor/ops.hpp"
#include "nn/transformer_variants.hpp"
#include "runtime/launch.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {
using namespace detail;

namespace {

// Invocations per row: 64 for vocabularies up to 1024 (fewer idle invocations at each barrier),
// else 256.
std::uint32_t local_size(std::int64_t V) { return V <= 1024 ? 64 : 256; }

struct SampleParams {
  std::int64_t V;
  double inv_temp;
  std::int64_t top_k;
  double top_p;
  std::uint64_t seed, offset;
  void set(Uniforms& u) const {
    u.u32("u_V", V);
    u.f32("u_inv_temp", inv_temp);
    u.u32("u_top_k", top_k);
    u.f32("u_top_p", top_p);
    u.uvec2("u_seed", static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
    u.uvec2("u_offset", static_cast<std::uint32_t>(offset), static_cast<std::uint32_t>(offset >> 32));
  }
};

// sample.comp's loop iterations: passes over the row (each ceil(V / local) plus a tree reduction
// of log2(local) <= 8 levels): the max, 32 for top-k, 33 for top-p, the segment sums; then
// invocation 0's walk.
std::uint64_t sample_loops(std::int64_t V, std::uint32_t local, bool top_k, bool top_p) {
  const std::uint64_t per = (static_cast<std::uint64_t>(V) + local - 1) / local;
  const std::uint64_t passes = 1 + (top_k ? 32 : 0) + (top_p ? 33 : 0);
  return passes * (per + 8) + per + 2 * local + per;
}

Tensor sample_impl(const Tensor& logits_in, const SamplingOptions& opt, std::uint64_t seed, std::uint64_t offset,
                   const Tensor& counter) {
  const char* op = "sample_tokens";
  check_defined(op, logits_in, "logits");
  if (logits_in.dim() != 1 && logits_in.dim() != 2)
    throw ShapeError("gltensor::sample_tokens: logits " + to_string(logits_in.shape()) + " must be [B, V] or [V]");
  if (!is_floating(logits_in.dtype()))
    throw DTypeError(std::string("gltensor::sample_tokens: logits must be a float tensor, got ") +
                     dtype_name(logits_in.dtype()));
  const std::int64_t V = logits_in.size(-1), B = logits_in.dim() == 2 ? logits_in.size(0) : 1;
  if (V == 0) throw ShapeError("gltensor::sample_tokens: logits " + to_string(logits_in.shape()) + " have no classes");
  if (!(opt.temperature >= 0) || !std::isfinite(opt.temperature))
    throw ValueError("gltensor::sample_tokens: temperature must be finite and >= 0, got " +
                     std::to_string(opt.temperature));
  if (opt.top_k < 0) throw ValueError("gltensor::sample_tokens: top_k must be >= 0, got " + std::to_string(opt.top_k));
  if (!(opt.top_p > 0 && opt.top_p <= 1))
    throw ValueError("gltensor::sample_tokens: top_p must be in (0, 1], got " + std::to_string(opt.top_p));
  if (counter.defined()) {
    check_same_device(op, {&logits_in, &counter});
    if (counter.dtype() != DType::i32 || counter.dim() != 1 || counter.size(0) != B)
      throw ShapeError("gltensor::sample_tokens: counter " + to_string(counter.shape()) + " (" +
                       dtype_name(counter.dtype()) + ") must be int32 [" + std::to_string(B) + "]");
  }
  DeviceImpl& dev = dev_of(logits_in);
  Enter guard(dev, op);
  NoGradGuard ng;
  const Tensor logits = logits_in.is_contiguous() && logits_in.offset() == 0 ? logits_in : detach(logits_in).clone();
  const Tensor ctr =
      counter.defined() && !(counter.is_contiguous() && counter.offset() == 0) ? counter.clone() : counter;
  Tensor out = alloc(dev, logits_in.dim() == 2 ? Shape{B} : Shape{}, DType::i32, op);
  if (B == 0) return out;
  const bool greedy = opt.temperature == 0;
  const bool top_k = !greedy && opt.top_k > 0 && opt.top_k < V, top_p = !greedy && opt.top_p < 1;
  const bool has_ctr = !greedy && ctr.defined();
  const std::uint32_t local = local_size(V);
  SampleVariant v;
  v.greedy = greedy, v.top_k = top_k, v.top_p = top_p, v.has_counter = has_ctr, v.logits = logits.dtype();
  Launch launch(dev, op);
  launch.program(v.kFile, v.defines(), {local});
  launch.write(out).read(logits);
  if (has_ctr) launch.read(ctr);
  launch.params(SampleParams{V, greedy ? 0.0 : 1.4426950408889634 / opt.temperature, top_k ? opt.top_k : 0, opt.top_p,
                             seed, offset});
  launch.loop_iterations(sample_loops(V, local, top_k, top_p)).groups(static_cast<std::uint64_t>(B));
  return out;
}

}  // namespace

Tensor sample_tokens(const Tensor& logits, const SamplingOptions& opt, Generator& gen) {
  const std::uint64_t offset = opt.temperature == 0 ? 0 : gen.next_offset();
  return sample_impl(logits, opt, gen.seed(), offset, Tensor());
}

Tensor sample_tokens(const Tensor& logits, const SamplingOptions& opt, std::uint64_t seed, const Tensor& counter) {
  check_defined("sample_tokens", counter, "counter");
  return sample_impl(logits, opt, seed, 0, counter);
}

}  // namespace gltensor
