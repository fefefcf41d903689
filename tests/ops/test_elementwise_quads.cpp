// The elementwise kernels' 128-bit form (glsl/common/elementwise.glsl's VEC4: contiguous 32-bit
// operands whose sizes and offsets are multiples of 4) with 1, 2, 4 and 8 quads per invocation
// (GLTENSOR_ELEMENTWISE_QUADS, set here through Settings), and the shapes just outside that form
// (sizes not a multiple of 4, views not 16-byte aligned), against float64 references rounded once
// to f32 (add and mul of two floats: exact in float64, so tolerance 0), with NaN/Inf among the
// inputs: whole and partial blocks of a workgroup's quads, the last quad, outputs written into
// views of a larger tensor (nothing outside the view changes), in-place forms, grids split into
// several dispatches.
#include <functional>

#include "ops/elementwise_plan.hpp"
#include "runtime/settings.hpp"
#include "test_util.hpp"

using namespace glt_test;
using namespace gltensor;

namespace {

// Settings::elementwise_quads for a scope (0: the plan's choice).
class ScopedQuads {
 public:
  explicit ScopedQuads(int quads) : saved_(detail::settings().elementwise_quads) {
    detail::settings().elementwise_quads = quads;
  }
  ~ScopedQuads() { detail::settings().elementwise_quads = saved_; }
  ScopedQuads(const ScopedQuads&) = delete;
  ScopedQuads& operator=(const ScopedQuads&) = delete;

 private:
  int saved_;
};

struct Op {
  const char* name;
  std::function<void(Tensor&, const Tensor&, const Tensor&)> out;  // out, a, b
  std::function<double(double, double)> ref;
};

const std::vector<Op>& ops() {
  static const std::vector<Op> o = {
      {"add", [](Tensor& r, const Tensor& a, const Tensor& b) { add_out(r, a, b); },
       [](double a, double b) { return double(float(a + b)); }},
      {"mul", [](Tensor& r, const Tensor& a, const Tensor& b) { mul_out(r, a, b); },
       [](double a, double b) { return double(float(a * b)); }},
  };
  return o;
}

// `n` elements of a fresh tensor of n + 8 starting at element `offset` (offset 4: 16-byte aligned).
Tensor view_of(const std::vector<float>& host, std::int64_t offset, std::int64_t n) {
  return Tensor::from_host(device(), host, {static_cast<std::int64_t>(host.size())}).narrow(0, offset, n);
}

// out = op(a, b) for a, b and out views at the given element offsets; the output's storage is
// filled with 7 beforehand and must keep it outside the view.
void check(std::mt19937_64& rng, const Op& op, std::int64_t n, std::int64_t off_a, std::int64_t off_b,
           std::int64_t off_out, int quads) {
  auto ha = uniform(rng, static_cast<std::size_t>(n + 8), -5, 5),
       hb = uniform(rng, static_cast<std::size_t>(n + 8), -5, 5);
  if (n > 40) {
    std::vector<float> head(ha.begin() + off_a, ha.end()), bhead(hb.begin() + off_b, hb.end());
    sprinkle_specials(head);
    std::copy(head.begin(), head.end(), ha.begin() + off_a);
    bhead[n - 1] = std::numeric_limits<float>::infinity();  // the last element too
    std::copy(bhead.begin(), bhead.end(), hb.begin() + off_b);
  }
  const Tensor a = view_of(ha, off_a, n), b = view_of(hb, off_b, n);
  const Tensor big = full(device(), {n + 8}, 7.0);
  Tensor out = big.narrow(0, off_out, n);
  op.out(out, a, b);
  const std::vector<float> got = big.to_vector();
  std::vector<double> ref(static_cast<std::size_t>(n + 8), 7.0);
  for (std::int64_t i = 0; i < n; ++i) ref[off_out + i] = op.ref(ha[off_a + i], hb[off_b + i]);
  EXPECT_TRUE(close(got, ref, 0, 0)) << op.name << " n=" << n << " offsets a " << off_a << " b " << off_b << " out "
                                     << off_out << " quads " << quads;
}

}  // namespace

// Sizes around a workgroup's block of quads (kElementwiseLocal x quads x 4 elements) for every
// quads setting, at 16-byte-aligned offsets (the 128-bit form) and at unaligned ones / sizes not a
// multiple of 4 (the element-wise form).
TEST(ElementwiseQuads, SizesAndOffsetsAgainstFloat64) {
  GLT_RNG(rng);
  const std::int64_t block8 = detail::kElementwiseLocal * 8 * 4;  // elements per workgroup at 8 quads
  for (int quads : {1, 2, 4, 8}) {
    ScopedQuads scoped(quads);
    const std::int64_t block = detail::kElementwiseLocal * quads * 4;
    for (const Op& op : ops()) {
      for (std::int64_t n :
           {std::int64_t{4}, std::int64_t{8}, std::int64_t{1028}, block, block + 4, 3 * block - 4, block8 + 12}) {
        check(rng, op, n, 0, 0, 0, quads);
        check(rng, op, n, 4, 0, 8, quads);  // 16-byte-aligned views: still the 128-bit form
      }
      for (std::int64_t n : {std::int64_t{1}, std::int64_t{3}, std::int64_t{1030}, block + 1, block + 3}) {
        check(rng, op, n, 0, 0, 0, quads);  // size not a multiple of 4
      }
      for (std::int64_t n : {std::int64_t{1028}, block + 4}) {
        check(rng, op, n, 1, 0, 0, quads);  // offsets not multiples of 4 (not 16-byte aligned)
        check(rng, op, n, 0, 2, 0, quads);
        check(rng, op, n, 0, 0, 3, quads);
        check(rng, op, n, 2, 2, 2, quads);
      }
    }
  }
}

// In-place (the output is input a: a += b, a *= b) and broadcast operands (not the 128-bit form)
// under every quads setting.
TEST(ElementwiseQuads, InPlaceAndBroadcast) {
  GLT_RNG(rng);
  for (int quads : {1, 2, 4, 8}) {
    ScopedQuads scoped(quads);
    const std::int64_t n = detail::kElementwiseLocal * quads * 4 * 2 + 4;
    auto ha = uniform(rng, static_cast<std::size_t>(n)), hb = uniform(rng, static_cast<std::size_t>(n));
    Tensor a = Tensor::from_host(device(), ha, {n}), b = Tensor::from_host(device(), hb, {n});
    add_(a, b);
    mul_(a, b);
    std::vector<double> ref(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) ref[i] = double(float(double(float(double(ha[i]) + hb[i])) * hb[i]));
    EXPECT_TRUE(close(a.to_vector(), ref, 0, 0)) << "in place, quads " << quads;
    const Tensor row = Tensor::from_host(device(), std::vector<float>(hb.begin(), hb.begin() + 4), {4});
    const Tensor m = Tensor::from_host(device(), ha, {n / 4, 4});
    const std::vector<float> got = add(m, row).to_vector();
    for (std::int64_t i = 0; i < n; ++i) ref[i] = double(float(double(ha[i]) + hb[i % 4]));
    EXPECT_TRUE(close(got, ref, 0, 0)) << "broadcast, quads " << quads;
  }
}

// More workgroups than one dispatch may have (the limit lowered to 3): the launch splits the grid
// and each part's quads come from the grid's workgroup index (u_group_base), not gl_WorkGroupID.
TEST(ElementwiseQuads, GridSplitIntoSeveralDispatches) {
  GLT_RNG(rng);
  for (int quads : {1, 2, 8}) {
    ScopedQuads scoped(quads);
    std::optional<ScopedDispatchLimit> dispatch_limit{std::in_place, 3};
    const std::int64_t n = detail::kElementwiseLocal * quads * 4 * 7 + 8;  // 8 workgroups
    check(rng, ops()[0], n, 0, 0, 0, quads);
    check(rng, ops()[1], n, 4, 8, 4, quads);
    dispatch_limit.reset();
  }
}
