// sort/argsort/topk: a merge sort of (key, index) pairs on sort.comp (segments sorted in shared
// memory, then merge passes), the values gathered from the input by the sorted indices.
#include <string>

#include "autograd/recording.hpp"
#include "gltensor/autograd.hpp"
#include "gltensor/indexing.hpp"
#include "ops/data_variants.hpp"
#include "runtime/launch.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {
using namespace detail;

namespace {

// sort.comp's segment sort: E pairs per invocation, 256 invocations, segments of up to 1024.
constexpr std::int64_t kSortE = 4, kSortLocal = 256, kSortBlock = kSortE * kSortLocal;

std::uint64_t log2_ceil(std::int64_t n) {
  std::uint64_t b = 0;
  while ((std::int64_t{1} << b) < n) ++b;
  return b;
}

// Uniforms of sort.comp's segment sort (SEGMENT_SORT).
struct SegmentSortParams {
  std::int64_t L, rows, P, segs, groups;
  std::vector<std::uint32_t> rows_shape, rows_stride;
  std::int64_t in_off, in_step;
  void set(Uniforms& u) const {
    u.u32("u_L", L);
    u.u32("u_rows", rows);
    u.u32("u_P", P);
    u.u32("u_segs", segs);
    u.u32("u_groups", groups);
    u.u32s("u_rows_shape", rows_shape);
    u.u32s("u_rows_stride", rows_stride);
    u.u32("u_in_off", in_off);
    u.u32("u_in_step", in_step);
  }
};

// Uniforms of sort.comp's merge pass.
struct MergeParams {
  std::int64_t L, rows, w;
  void set(Uniforms& u) const {
    u.u32("u_L", L);
    u.u32("u_rows", rows);
    u.u32("u_w", w);
    u.u32("u_count", rows * L);
  }
};

// Indices (int32, x's shape) that sort each row of x along its last dim (x: at least 1 dim,
// not empty): stable, NaN last (first when descending).
Tensor sort_indices(DeviceImpl& dev, const Tensor& x, bool descending, const char* op) {
  const std::int64_t L = x.size(-1), rows = x.numel() / L;
  Shape rs(x.shape().begin(), x.shape().end() - 1), rst(x.strides().begin(), x.strides().end() - 1);
  if (rs.empty()) {
    rs = {1};
    rst = {0};
  }
  Tensor indices = alloc(dev, x.shape(), DType::i32, op);
  // Loops of the segment sort (each counting its exit test): E loads, each through the row's
  // dims; the bitonic network's log2(P) merges of 1..log2(P) steps of `pairs` compare-exchanges;
  // E stores.
  auto segment_loops = [&](std::int64_t P) {
    const std::uint64_t lg = log2_ceil(P), steps = lg * (lg + 1) / 2, pairs = kSortBlock / 2 / kSortLocal;
    return (kSortE + 1) * (rs.size() + 2) + (lg + 1) + (steps + lg) + steps * (pairs + 1) + (kSortE + 1);
  };
  // Segments: the row's length rounded up to a power of two, at most one workgroup's block, and
  // shorter where the device's loop limit is lower than the network's steps.
  std::int64_t P = 1;
  while (P < L && P < kSortBlock) P *= 2;
  const std::uint64_t limit = dev.loop_limit();
  while (P > 1 && limit != 0 && segment_loops(P) > limit) P /= 2;
  const std::int64_t segs = (L + P - 1) / P, groups = (rows * segs + kSortBlock / P - 1) / (kSortBlock / P);
  // Pairs ping-pong between two (keys, indices) buffers; the last pass writes the result.
  Tensor keys[2], idx[2];
  if (segs > 1)
    for (int i = 0; i < 2; ++i) {
      keys[i] = alloc(dev, {rows * L}, DType::i32, op);
      idx[i] = alloc(dev, {rows * L}, DType::i32, op);
    }
  {
    const bool final = segs == 1;
    SortVariant v;
    v.e = kSortE, v.rd = static_cast<int>(rs.size()), v.descending = descending, v.final = final, v.in = x.dtype();
    Launch launch(dev, op);
    launch.program(v.kFile, v.defines(), {static_cast<std::uint32_t>(kSortLocal)});
    launch.write(final ? indices : idx[0]).read(x);
    if (!final) launch.write(keys[0]);
    launch.params(SegmentSortParams{
        L, rows, P, segs, groups, {rs.begin(), rs.end()}, {rst.begin(), rst.end()}, x.offset(), x.strides().back()});
    launch.loop_iterations(segment_loops(P)).groups_1d(static_cast<std::uint64_t>(groups));
  }
  int cur = 0;
  for (std::int64_t w = P; w < L; w *= 2) {
    const bool final = 2 * w >= L;
    SortVariant v;
    v.segments = false, v.final = final;
    Launch launch(dev, op);
    launch.program(v.kFile, v.defines(), {static_cast<std::uint32_t>(kSortLocal)});
    launch.write(final ? indices : idx[1 - cur]).read(keys[cur]).read(idx[cur]);
    if (!final) launch.write(keys[1 - cur]);
    // Loops: the binary search over the partner run (at most log2(w) + 1 halvings) and its exit
    // test.
    launch.params(MergeParams{L, rows, w}).loop_iterations(log2_ceil(w + 1) + 2);
    launch.invocations(static_cast<std::uint64_t>(rows * L));
    cur = 1 - cur;
  }
  return indices;
}

// x's values at `indices` along the last dim (no gradient recorded).
Tensor take_last(const Tensor& x, const Tensor& indices) {
  NoGradGuard ng;
  return gather(x, -1, indices);
}

}  // namespace

SortResult sort(const Tensor& x_in, bool descending) {
  check_defined("sort", x_in);
  DeviceImpl& dev = dev_of(x_in);
  Enter guard(dev, "sort");
  const Tensor x = x_in.dim() == 0 ? x_in.reshape({1}) : x_in;
  SortResult r;
  if (x.numel() == 0) {
    r = {alloc(dev, x.shape(), x.dtype(), "sort"), alloc(dev, x.shape(), DType::i32, "sort")};
  } else {
    r.indices = sort_indices(dev, x, descending, "sort");
    r.values = take_last(x, r.indices);
  }
  if (x_in.dim() == 0) r = {r.values.reshape({}), r.indices.reshape({})};
  grad_unsupported("sort", {&x_in}, r.values);
  return r;
}

Tensor argsort(const Tensor& x, bool descending) {
  check_defined("argsort", x);
  DeviceImpl& dev = dev_of(x);
  Enter guard(dev, "argsort");
  const Tensor x1 = x.dim() == 0 ? x.reshape({1}) : x;
  Tensor r =
      x1.numel() == 0 ? alloc(dev, x1.shape(), DType::i32, "argsort") : sort_indices(dev, x1, descending, "argsort");
  return x.dim() == 0 ? r.reshape({}) : r;
}

SortResult topk(const Tensor& x, std::int64_t k, bool largest) {
  check_defined("topk", x);
  const std::int64_t L = x.dim() ? x.size(-1) : 1;
  if (k < 0 || k > L)
    throw IndexError("gltensor::topk: k = " + std::to_string(k) + " is out of range for the last dim of " +
                     to_string(x.shape()));
  if (x.dim() == 0) return sort(x, largest);
  DeviceImpl& dev = dev_of(x);
  Enter guard(dev, "topk");
  Shape s = x.shape();
  s.back() = k;
  SortResult r;
  if (x.numel() == 0 || k == 0) {
    r = {alloc(dev, s, x.dtype(), "topk"), alloc(dev, s, DType::i32, "topk")};
  } else {
    r.indices = sort_indices(dev, x, largest, "topk").narrow(-1, 0, k).contiguous();
    r.values = take_last(x, r.indices);
  }
  grad_unsupported("topk", {&x}, r.values);
  return r;
}

}  // namespace gltensor
