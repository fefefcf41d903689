// KV caches for decoding (include/gltensor/kv_cache.hpp): append, advance and positions
// (glsl/nn/kv_cache.comp, one dispatch each), attention over the cache (glsl/nn/kv_attention.comp:
// one dispatch per chunk grid, plus a combine dispatch where max_len needs several chunks), and
// the KVCache class. No gradients: the cache serves inference.
#include "gltensor/kv_cache.hpp"

#include <algorithm>
#include <cmath>

#include "gltensor/ops.hpp"
#include "nn/kv_combine.hpp"
#include "nn/transformer_variants.hpp"
#include "runtime/capture.hpp"
#include "runtime/error_flags.hpp"
#include "runtime/int_math.hpp"
#include "runtime/launch.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {
using namespace detail;

namespace {

constexpr std::uint32_t kLocal = 64;
constexpr std::int64_t kMaxHeadDim = 256;

// KVCache::append's host check: T more tokens after the longest sequence's `longest`.
void check_room(std::int64_t longest, std::int64_t T, std::int64_t max_len) {
  if (longest + T > max_len)
    throw LimitError("gltensor::kv_cache_append: appending " + std::to_string(T) + " tokens to a sequence of " +
                     std::to_string(longest) + " passes the cache's max_len " + std::to_string(max_len));
}

// The capture in progress on t's device, if any: KVCache's host steps go into it.
Capture* capture_of(const Tensor& t) { return t.defined() ? dev_of(t).queue().capture() : nullptr; }

std::string ints(std::span<const std::int64_t> v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

void check_lengths(const char* op, const Tensor& lengths, std::int64_t B) {
  check_defined(op, lengths, "lengths");
  if (lengths.dtype() != DType::i32)
    throw DTypeError(std::string("gltensor::") + op + ": lengths must be int32, got " + dtype_name(lengths.dtype()));
  if (lengths.dim() != 1 || (B >= 0 && lengths.size(0) != B))
    throw ShapeError(std::string("gltensor::") + op + ": lengths " + to_string(lengths.shape()) + " must be [B]" +
                     (B >= 0 ? " with B = " + std::to_string(B) : ""));
  if (!lengths.is_contiguous())
    throw ValueError(std::string("gltensor::") + op + ": lengths must be contiguous (the kernels update it in place)");
}

void check_float(const char* op, const char* what, const Tensor& t) {
  check_defined(op, t, what);
  if (!is_floating(t.dtype()))
    throw DTypeError(std::string("gltensor::") + op + ": " + what + " must be a float tensor, got " +
                     dtype_name(t.dtype()));
}

void check_cache(const char* op, const char* what, const Tensor& c) {
  check_float(op, what, c);
  if (c.dim() != 4)
    throw ShapeError(std::string("gltensor::") + op + ": " + what + " " + to_string(c.shape()) +
                     " must be [B, H_kv, max_len, head_dim]");
  if (!(c.is_contiguous() && c.offset() == 0))
    throw ValueError(std::string("gltensor::") + op + ": " + what + " must be a contiguous tensor (the cache)");
}

// The 4-D strides and offset of a [B, H, T, E] view, as uint uniforms.
struct View4 {
  std::vector<std::uint32_t> st;
  std::int64_t off;
};
View4 view4(const Tensor& t) {
  View4 v{{}, t.offset()};
  for (std::int64_t d = 0; d < 4; ++d) v.st.push_back(static_cast<std::uint32_t>(t.size(d) > 1 ? t.strides()[d] : 0));
  return v;
}

struct AppendParams {
  std::int64_t count, W, H, T, M, E, Ev;
  View4 k, v;
  void set(Uniforms& u) const {
    u.u32("u_count", count);
    u.u32("u_W", W);
    u.u32("u_H", H);
    u.u32("u_T", T);
    u.u32("u_M", M);
    u.u32("u_E", E);
    u.u32("u_Ev", Ev);
    u.u32s("u_k_st", k.st);
    u.u32s("u_v_st", v.st);
    u.u32("u_k_off", k.off);
    u.u32("u_v_off", v.off);
  }
};

struct AdvanceParams {
  std::int64_t count, n;
  void set(Uniforms& u) const {
    u.u32("u_count", count);
    u.i32("u_n", n);
  }
};

struct PositionsParams {
  std::int64_t count, T;
  void set(Uniforms& u) const {
    u.u32("u_count", count);
    u.u32("u_T", T);
  }
};

struct PartialParams {
  std::int64_t rows, Ev, Hq, Hkv, T, M, E;
  View4 q;
  double scale;
  void set(Uniforms& u) const {
    u.u32("u_rows", rows);
    u.u32("u_Ev", Ev);
    u.u32("u_Hq", Hq);
    u.u32("u_Hkv", Hkv);
    u.u32("u_group", Hq / Hkv);
    u.u32("u_T", T);
    u.u32("u_M", M);
    u.u32("u_E", E);
    u.u32s("u_q_st", q.st);
    u.u32("u_q_off", q.off);
    u.f32("u_scale", scale * 1.4426950408889634);
  }
};

std::uint64_t partial_loops(std::int64_t chunk, std::int64_t E, std::int64_t Ev) {
  const auto c = static_cast<std::uint64_t>(chunk), e = static_cast<std::uint64_t>(E),
             ev = static_cast<std::uint64_t>(Ev);
  // q into shared memory; per key of the invocation a dot product; two tree reductions (6 levels
  // each); the exponentials; per output element the chunk's keys
  return ceil_div(e, kLocal) + ceil_div(c, kLocal) * (e + 2) + 12 + ceil_div(ev, kLocal) * c;
}

}  // namespace

namespace detail {

namespace {
struct CombineParams {
  std::int64_t rows, Ev, chunks;
  void set(Uniforms& u) const {
    u.u32("u_rows", rows);
    u.u32("u_Ev", Ev);
    u.u32("u_chunks", chunks);
  }
};
}  // namespace

void kv_combine(DeviceImpl& dev, const char* op, const Tensor& partials, const Tensor& out, std::int64_t rows,
                std::int64_t Ev, std::int64_t chunks) {
  KvAttentionVariant v;
  v.mode = "kv_combine", v.out = out.dtype();
  Launch launch(dev, op);
  launch.program(v.kFile, v.defines(), {kLocal});
  launch.write(out).read(partials).params(CombineParams{rows, Ev, chunks});
  launch.loop_iterations(2 * static_cast<std::uint64_t>(chunks)).invocations(static_cast<std::uint64_t>(rows * Ev));
}

}  // namespace detail

KvAttentionPlan kv_attention_plan(std::int64_t max_len, std::int64_t E, std::int64_t Ev, std::uint64_t loop_limit) {
  KvAttentionPlan p;
  // One chunk over the whole cache where it is short (one dispatch), else chunks of 512 keys
  // (parallel over the keys: flash-decoding), smaller while the loops pass the limit.
  std::int64_t chunk = max_len <= 1024 ? std::max<std::int64_t>(64, (max_len + 63) / 64 * 64) : 512;
  while (chunk > 64 && partial_loops(chunk, E, Ev) > loop_limit) chunk -= 64;
  p.chunk = chunk;
  p.loops = partial_loops(chunk, E, Ev);
  if (p.loops > loop_limit)
    throw LimitError("gltensor::kv_cache_attention: 64 keys of head dims " + std::to_string(E) + "/" +
                     std::to_string(Ev) + " need " + std::to_string(p.loops) +
                     " loop iterations per invocation, the device's limit is " + std::to_string(loop_limit));
  p.splits = (max_len + chunk - 1) / chunk;
  if (static_cast<std::uint64_t>(2 * p.splits) > loop_limit)
    throw LimitError("gltensor::kv_cache_attention: max_len " + std::to_string(max_len) + " needs " +
                     std::to_string(p.splits) + " chunks of " + std::to_string(chunk) +
                     " keys, more than the combine's loop limit allows (" + std::to_string(loop_limit / 2) + ")");
  return p;
}

void kv_cache_append(const Tensor& k_cache, const Tensor& v_cache, const Tensor& k, const Tensor& v,
                     const Tensor& lengths) {
  const char* op = "kv_cache_append";
  check_cache(op, "k_cache", k_cache);
  check_cache(op, "v_cache", v_cache);
  check_float(op, "k", k);
  check_float(op, "v", v);
  check_same_device(op, {&k_cache, &v_cache, &k, &v, &lengths});
  const Shape& kc = k_cache.shape();
  const Shape& vc = v_cache.shape();
  const std::int64_t B = kc[0], H = kc[1], M = kc[2], E = kc[3], Ev = vc[3];
  if (vc[0] != B || vc[1] != H || vc[2] != M || k.dim() != 4 || v.dim() != 4 || k.size(0) != B || k.size(1) != H ||
      k.size(3) != E || v.size(0) != B || v.size(1) != H || v.size(2) != k.size(2) || v.size(3) != Ev)
    throw ShapeError("gltensor::kv_cache_append: k " + to_string(k.shape()) + " and v " + to_string(v.shape()) +
                     " must be [B, H_kv, T, E] and [B, H_kv, T, Ev] for the caches " + to_string(kc) + " and " +
                     to_string(vc));
  check_lengths(op, lengths, B);
  const std::int64_t T = k.size(2), W = std::max(E, Ev), count = B * H * T * W;
  if (count == 0) return;
  DeviceImpl& dev = dev_of(k);
  Enter guard(dev, op);
  ErrorFlags& flags = dev.extension<ErrorFlags>();
  KvCacheVariant kv;
  kv.k_cache = k_cache.dtype(), kv.v_cache = v_cache.dtype(), kv.k = k.dtype(), kv.v = v.dtype();
  Launch launch(dev, op);
  launch.program(kv.kFile, kv.defines(), {kLocal});
  launch.write(k_cache).write(v_cache).read(k).read(v).read(lengths).bind(flags.storage(dev), true);
  launch.params(AppendParams{count, W, H, T, M, E, Ev, view4(k), view4(v)}).loop_iterations(0);
  launch.invocations(static_cast<std::uint64_t>(count));
  flags.expect(dev, op, ErrorFlags::kCacheFull);
}

void kv_cache_advance(const Tensor& lengths, std::int64_t n) {
  const char* op = "kv_cache_advance";
  check_lengths(op, lengths, -1);
  if (n < 0 || n > INT32_MAX)
    throw ValueError("gltensor::kv_cache_advance: n must be in [0, 2^31), got " + std::to_string(n));
  if (lengths.numel() == 0 || n == 0) return;
  DeviceImpl& dev = dev_of(lengths);
  Enter guard(dev, op);
  Launch launch(dev, op);
  KvCacheVariant kv;
  kv.mode = "kv_advance";
  launch.program(kv.kFile, kv.defines(), {kLocal});
  launch.write(lengths).params(AdvanceParams{lengths.numel(), n}).loop_iterations(0);
  launch.invocations(static_cast<std::uint64_t>(lengths.numel()));
}

Tensor kv_cache_positions(const Tensor& lengths, std::int64_t T) {
  const char* op = "kv_cache_positions";
  check_lengths(op, lengths, -1);
  if (T < 0) throw ValueError("gltensor::kv_cache_positions: T must be >= 0, got " + std::to_string(T));
  DeviceImpl& dev = dev_of(lengths);
  Enter guard(dev, op);
  Tensor out = alloc(dev, {lengths.size(0), T}, DType::i32, op);
  if (out.numel() == 0) return out;
  Launch launch(dev, op);
  KvCacheVariant kv;
  kv.mode = "kv_positions";
  launch.program(kv.kFile, kv.defines(), {kLocal});
  launch.write(out).read(lengths).params(PositionsParams{out.numel(), T}).loop_iterations(0);
  launch.invocations(static_cast<std::uint64_t>(out.numel()));
  return out;
}

Tensor kv_cache_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& lengths,
                          double scale) {
  const char* op = "kv_cache_attention";
  check_float(op, "q", q);
  check_cache(op, "k_cache", k_cache);
  check_cache(op, "v_cache", v_cache);
  check_same_device(op, {&q, &k_cache, &v_cache, &lengths});
  const Shape& kc = k_cache.shape();
  const Shape& vc = v_cache.shape();
  if (q.dim() != 4)
    throw ShapeError("gltensor::kv_cache_attention: q " + to_string(q.shape()) + " must be [B, H_q, T, E]");
  const std::int64_t B = q.size(0), Hq = q.size(1), T = q.size(2), E = q.size(3);
  const std::int64_t Hkv = kc[1], M = kc[2], Ev = vc[3];
  if (kc[0] != B || kc[3] != E || vc[0] != B || vc[1] != Hkv || vc[2] != M || Hkv == 0 || Hq % Hkv != 0)
    throw ShapeError("gltensor::kv_cache_attention: q " + to_string(q.shape()) + ", k_cache " + to_string(kc) +
                     " and v_cache " + to_string(vc) +
                     " must be [B, H_q, T, E], [B, H_kv, max_len, E] and [B, H_kv, max_len, Ev] with H_q a multiple "
                     "of H_kv");
  check_lengths(op, lengths, B);
  if (E > kMaxHeadDim || Ev > kMaxHeadDim)
    throw LimitError("gltensor::kv_cache_attention: head dims " + ints(std::vector<std::int64_t>{E, Ev}) + " exceed " +
                     std::to_string(kMaxHeadDim));
  if (!(scale >= 0) || !std::isfinite(scale))
    throw ValueError("gltensor::kv_cache_attention: scale must be finite and >= 0 (0: 1 / sqrt(E)), got " +
                     std::to_string(scale));
  DeviceImpl& dev = dev_of(q);
  Enter guard(dev, op);
  Tensor out = alloc(dev, {B, Hq, T, Ev}, q.dtype(), op);
  const std::int64_t rows = B * Hq * T;
  if (out.numel() == 0) return out;
  if (M == 0) return out.fill_(NAN);  // no keys: 0 / 0, as torch
  const KvAttentionPlan plan = kv_attention_plan(M, E, Ev, dev.loop_budget());
  const bool single = plan.splits == 1;
  Tensor ws = single ? out : alloc(dev, {plan.splits, rows, Ev + 2}, DType::f32, op);
  const double s = scale > 0 ? scale : 1.0 / std::sqrt(static_cast<double>(E));
  {
    KvAttentionVariant v;
    v.chunk = plan.chunk, v.emax = std::max<std::int64_t>(E, 1), v.single = single;
    v.out = ws.dtype(), v.q = q.dtype(), v.k_cache = k_cache.dtype(), v.v_cache = v_cache.dtype();
    Launch launch(dev, op);
    launch.program(v.kFile, v.defines(), {kLocal});
    launch.write(ws).read(q).read(k_cache).read(v_cache).read(lengths);
    launch.params(PartialParams{rows, Ev, Hq, Hkv, T, M, E, view4(q), s}).loop_iterations(plan.loops);
    launch.groups(static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(plan.splits));
  }
  if (!single) kv_combine(dev, op, ws, out, rows, Ev, plan.splits);
  return out;
}

// ---- KVCache ----

KVCache::KVCache(const Device& dev, std::int64_t layers, std::int64_t batch, std::int64_t kv_heads,
                 std::int64_t max_len, std::int64_t head_dim, DType dtype)
    : max_len_(max_len) {
  if (layers <= 0 || batch <= 0 || kv_heads <= 0 || max_len <= 0 || head_dim <= 0 || max_len > INT32_MAX)
    throw ValueError(
        "gltensor::KVCache: layers, batch, kv_heads, max_len and head_dim must be positive (max_len < "
        "2^31), got " +
        ints(std::vector<std::int64_t>{layers, batch, kv_heads, max_len, head_dim}));
  if (!is_floating(dtype))
    throw DTypeError(std::string("gltensor::KVCache: the cache's dtype must be a float type, got ") +
                     dtype_name(dtype));
  for (std::int64_t l = 0; l < layers; ++l) {
    k_.push_back(zeros(dev, {batch, kv_heads, max_len, head_dim}, dtype));
    v_.push_back(zeros(dev, {batch, kv_heads, max_len, head_dim}, dtype));
  }
  lengths_ = zeros(dev, {batch}, DType::i32);
}

void KVCache::append(std::int64_t layer, const Tensor& k, const Tensor& v) {
  if (layer < 0 || layer >= layers())
    throw IndexError("gltensor::kv_cache_append: layer " + std::to_string(layer) + " of a cache of " +
                     std::to_string(layers()) + " layers");
  const std::int64_t T = k.dim() == 4 ? k.size(2) : 0;
  check_room(*host_max_, T, max_len_);
  kv_cache_append(k_[static_cast<std::size_t>(layer)], v_[static_cast<std::size_t>(layer)], k, v, lengths_);
  // A replay repeats the check against the count as the replays before it advanced it.
  if (Capture* cap = capture_of(lengths_))
    cap->host_steps.push_back({[count = host_max_, T, M = max_len_] { check_room(*count, T, M); }, {}});
}

Tensor KVCache::attention(std::int64_t layer, const Tensor& q, double scale) const {
  if (layer < 0 || layer >= layers())
    throw IndexError("gltensor::kv_cache_attention: layer " + std::to_string(layer) + " of a cache of " +
                     std::to_string(layers()) + " layers");
  return kv_cache_attention(q, k_[static_cast<std::size_t>(layer)], v_[static_cast<std::size_t>(layer)], lengths_,
                            scale);
}

void KVCache::advance(std::int64_t T) {
  kv_cache_advance(lengths_, T);
  *host_max_ += T;
  if (Capture* cap = capture_of(lengths_))
    cap->host_steps.push_back({[count = host_max_, T] { *count += T; }, [count = host_max_, T] { *count -= T; }});
}

void KVCache::set_lengths(std::span<const std::int32_t> lengths) {
  // Inside a capture the upload's values would be the replays' too: every replay of a captured
  // decode step would start again from them (a trap; loose12). Refused there.
  if (lengths_.defined() && dev_of(lengths_).queue().capture())
    throw CaptureError(
        "gltensor::KVCache::set_lengths: sets the lengths from host data while a Recording is being captured (every "
        "replay would restore the same lengths); set them before the capture or between replays, or advance() them "
        "on the GPU");
  if (static_cast<std::int64_t>(lengths.size()) != batch())
    throw ShapeError("gltensor::KVCache::set_lengths: " + std::to_string(lengths.size()) + " lengths for a batch of " +
                     std::to_string(batch()));
  std::int64_t mx = 0;
  for (std::int32_t l : lengths) {
    if (l < 0 || l > max_len_)
      throw LimitError("gltensor::KVCache::set_lengths: length " + std::to_string(l) + " outside [0, max_len " +
                       std::to_string(max_len_) + "]");
    mx = std::max<std::int64_t>(mx, l);
  }
  lengths_.copy_(Tensor::from_host(lengths_.device(), lengths, {batch()}));
  *host_max_ = mx;
}

void KVCache::reset() {
  if (!lengths_.defined()) return;  // (a default-constructed or moved-from cache)
  lengths_.fill_(0);
  *host_max_ = 0;
  if (Capture* cap = capture_of(lengths_)) {  // the replays' fill_ too: the count to 0, restored by undo
    auto before = std::make_shared<std::int64_t>(0);
    cap->host_steps.push_back({[count = host_max_, before] { *before = *count, *count = 0; },
                               [count = host_max_, before] { *count = *before; }});
  }
}

}  // namespace gltensor
