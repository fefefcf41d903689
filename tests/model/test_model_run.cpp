// gltensor::Model::run's per-run state (issue 21): RunStats per call, and one Model run by several
// threads at once, each on its own Device (a Device belongs to the thread that opened it), with
// and without ModelOptions::replay; every output checked against a float64 reference.
#include <atomic>
#include <cstring>
#include <thread>

#include "gltensor/gltensor.hpp"
#include "test_util.hpp"
#include "three_gemm.hpp"

using namespace gltensor;
using namespace glt_test;
using B = OnnxBuilder;

namespace {

// `runs` runs of `model` on `dev` with fresh inputs of `rows` rows (alternating with rows + 1: a
// new set of shapes each time), each output checked; returns how many were right. host: through
// Model::run_host (host data in and out) instead of tensors.
int run_and_check(const Model& model, const ThreeGemm& g, Device& dev, std::uint64_t seed, int runs, std::int64_t rows,
                  bool host = false) {
  std::mt19937_64 rng(seed);
  int right = 0;
  for (int i = 0; i < runs; ++i) {
    const std::int64_t r = rows + (i / 3) % 2;  // three runs of a shape (warm-up, capture, replay)
    const auto x = uniform(rng, static_cast<std::size_t>(r * ThreeGemm::W));
    RunStats st;
    const Shape s{1, r, ThreeGemm::W};
    Shape shape;
    std::vector<float> y;
    if (host) {
      const HostOutput o = model.run_host(dev, {{"x", HostInput{x.data(), x.size() * 4, s, DType::f32}}}, &st).at("y");
      shape = o.shape;
      y.resize(o.bytes.size() / 4);
      std::memcpy(y.data(), o.bytes.data(), o.bytes.size());
    } else {
      const Tensor t = model.run({{"x", Tensor::from_host(dev, x, s)}}, &st).at("y");
      shape = t.shape();
      y = t.to_vector();
    }
    const bool ok = shape == s && close(y, g.ref(x, r), 1e-4, 1e-4) && st.dispatches > 0;
    right += ok ? 1 : 0;
  }
  return right;
}

}  // namespace

// ModelOptions::replay?, Model::run_host (its host-visible buffers are per device)?
class ModelThreads : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

// Three threads run one Model at the same time: the test's thread on the load device, two more
// each on a Device of its own (the model uploads its weights there at the first run), with
// different inputs and shapes.
TEST_P(ModelThreads, OneModelRunsOnSeveralThreadsAtOnce) {
  GLT_RNG(rng);
  const ThreeGemm g(rng, "threads_three_gemm");
  const auto [replay, host] = GetParam();
  const Model model = load_model(g.path, replay);
  const std::uint64_t seed = rng();
  constexpr int kRuns = 12;
  std::atomic<int> ready{0};
  std::vector<int> right(2, -1);
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      try {
        Device dev = Device::open();
        ++ready;
        while (ready.load() < 3) std::this_thread::yield();  // all three start together
        right[t] = run_and_check(model, g, dev, seed + 1 + t, kRuns, 5 + 7 * t, host);
        model.release(dev);
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  ++ready;
  while (ready.load() < 3) std::this_thread::yield();
  const int mine = run_and_check(model, g, device(), seed, kRuns, 34, host);
  for (auto& th : threads) th.join();
  EXPECT_EQ(mine, kRuns) << "seed " << seed;
  for (int t = 0; t < 2; ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t;
    EXPECT_EQ(right[t], kRuns) << "thread " << t << ", seed " << seed;
  }
  // The model still runs on its own device afterwards.
  EXPECT_EQ(run_and_check(model, g, device(), seed + 9, 3, 1, host), 3);
}

INSTANTIATE_TEST_SUITE_P(Model, ModelThreads, ::testing::Combine(::testing::Bool(), ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) ? "replay" : "plain") +
                                  (std::get<1>(info.param) ? "_run_host" : "");
                         });

// RunStats: what the run did on its device, reported by the call and by last_run().
TEST(ModelRunStats, EachCallReportsItsOwnRun) {
  GLT_RNG(rng);
  const ThreeGemm g(rng, "stats_three_gemm");
  ScopedSettings s;
  s->fused_mlp = 0;  // three dispatches (one with fuse_mlp, the GPUs' default: tests/model/test_fused_mlp.cpp)
  const Model model = load_model(g.path, false);
  Device& dev = device();
  const Tensor x = Tensor::from_host(dev, uniform(rng, 34 * ThreeGemm::W), {1, 34, ThreeGemm::W});
  model.run({{"x", x}});  // kernels compiled
  RunStats a, b;
  auto d0 = dev.dispatch_count(), b0 = dev.barrier_count();
  model.run({{"x", x}}, &a);
  EXPECT_EQ(a.dispatches, dev.dispatch_count() - d0);
  EXPECT_EQ(a.barriers, dev.barrier_count() - b0);
  EXPECT_EQ(a.dispatches, 3u);  // one fused MatMul + bias (+ ReLU) per layer
  // Each layer's product reads the last one's output: a barrier before layers 2 and 3.
  EXPECT_GE(a.barriers, 2u);
  // Three [1, 34, 96] f32 outputs, at most two alive at once.
  const std::size_t t = 34 * ThreeGemm::W * 4;
  EXPECT_EQ(a.total_intermediate_bytes, 3 * t);
  EXPECT_GE(a.peak_bytes, t);
  EXPECT_LE(a.peak_bytes, 2 * t);
  EXPECT_EQ(model.last_run().dispatches, a.dispatches);
  EXPECT_EQ(model.peak_bytes(), a.peak_bytes);
  // A smaller input: its own statistics, not the previous run's.
  const Tensor x1 = Tensor::from_host(dev, uniform(rng, ThreeGemm::W), {1, 1, ThreeGemm::W});
  model.run({{"x", x1}}, &b);
  EXPECT_EQ(b.total_intermediate_bytes, 3 * ThreeGemm::W * 4);
  EXPECT_EQ(model.total_intermediate_bytes(), b.total_intermediate_bytes);
}

// Inputs on two devices in one call: refused, naming the input.
TEST(ModelRunStats, InputsOnTwoDevicesAreRefused) {
  B m(13);
  m.input("x", {2}).input("y", {2}).output("z", {2});
  m.node("Add", {"x", "y"}, {"z"});
  const Model model = Model::load(device(), m.save("two_devices_add"));
  Device other = Device::open();
  const std::vector<float> v{1, 2};
  EXPECT_THROW_MSG(model.run({{"x", Tensor::from_host(device(), v, {2})}, {"y", Tensor::from_host(other, v, {2})}}),
                   ModelError, "'y' lives on another device");
  EXPECT_EQ(model.run({{"x", Tensor::from_host(device(), v, {2})}, {"y", Tensor::from_host(device(), v, {2})}})
                .at("z")
                .to_vector(),
            (std::vector<float>{2, 4}));
}

// Two independent chains written one after the other (a1 = x w1, a2 = a1 w2, then b1 = x w3,
// b2 = b1 w4): the plan runs them by dependency level (a1, b1, then a2, b2), so that the two
// products of each level share one barrier interval: one barrier per run instead of two.
TEST(ModelRunPlan, IndependentNodesShareABarrierInterval) {
  GLT_RNG(rng);
  const std::int64_t R = 4, K = 8, N1 = 16, N3 = 32, N4 = 64;
  const auto w1 = uniform(rng, K * N1), w2 = uniform(rng, N1 * N1), w3 = uniform(rng, K * N3),
             w4 = uniform(rng, N3 * N4);
  B m(13);
  // Every product is an output: none is released during the run, so that no buffer a product
  // read is reused by a later one (a write after read: a barrier of its own).
  m.input("x", {R, K}).output("a1", {R, N1}).output("a2", {R, N1}).output("b1", {R, N3}).output("b2", {R, N4});
  m.init("w1", {K, N1}, w1).init("w2", {N1, N1}, w2).init("w3", {K, N3}, w3).init("w4", {N3, N4}, w4);
  m.node("MatMul", {"x", "w1"}, {"a1"});
  m.node("MatMul", {"a1", "w2"}, {"a2"});
  m.node("MatMul", {"x", "w3"}, {"b1"});
  m.node("MatMul", {"b1", "w4"}, {"b2"});
  const Model model = Model::load(device(), m.save("two_chains"));
  const auto x = uniform(rng, R * K);
  const Tensor xt = Tensor::from_host(device(), x, {R, K});
  model.run({{"x", xt}});  // kernels compiled
  device().synchronize();
  RunStats st;
  const auto out = model.run({{"x", xt}}, &st);
  EXPECT_EQ(st.dispatches, 4u);
  EXPECT_EQ(st.barriers, 1u);  // before a2 and b2 (file order: before a2, and again before b2)
  auto mm = [](const std::vector<double>& a, const std::vector<float>& b, std::int64_t r, std::int64_t k,
               std::int64_t n) {
    std::vector<double> c(static_cast<std::size_t>(r * n), 0.0);
    for (std::int64_t i = 0; i < r; ++i)
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t q = 0; q < k; ++q) c[i * n + j] += a[i * k + q] * b[q * n + j];
    return c;
  };
  const auto xd = to_double(x);
  EXPECT_TRUE(close(out.at("a2").to_vector(), mm(mm(xd, w1, R, K, N1), w2, R, N1, N1), 1e-4, 1e-4));
  EXPECT_TRUE(close(out.at("b2").to_vector(), mm(mm(xd, w3, R, K, N3), w4, R, N3, N4), 1e-4, 1e-4));
}
