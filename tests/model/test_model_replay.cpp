// gltensor::Model with ModelOptions::replay: the first run of a set of input shapes runs plain,
// the second is captured as a Recording, later runs of those shapes replay it. Checked against float64 references and
// against the same model run without replay, across many runs with new input contents, shape
// changes (a new capture) and a graph that cannot be captured (it reads values back).
#include <cmath>
#include <map>

#include "gltensor/gltensor.hpp"
#include "onnx_builder.hpp"
#include "test_util.hpp"
#include "three_gemm.hpp"

using namespace gltensor;
using namespace glt_test;
using B = OnnxBuilder;

TEST(ModelReplay, RunsEqualThePlainPathAcrossContentsAndShapes) {
  GLT_RNG(rng);
  const ThreeGemm g(rng);
  Model plain = load_model(g.path, false), replayed = load_model(g.path, true);
  Device& dev = device();
  for (std::int64_t rows : {34, 34, 34, 34, 5, 5, 5, 34, 34, 34, 1, 1, 1}) {
    SCOPED_TRACE("rows " + std::to_string(rows));
    auto x = uniform(rng, rows * ThreeGemm::W);
    if (rows == 1) sprinkle_specials(x);
    Tensor xt = Tensor::from_host(dev, x, {1, rows, ThreeGemm::W});
    const auto want = plain.run({{"x", xt}}).at("y").to_vector();
    const auto got = replayed.run({{"x", xt}}).at("y").to_vector();
    EXPECT_TRUE(close(got, to_double(want), 0, 0)) << "replay differs from the plain run";
    if (rows != 1) {  // rows == 1 has NaN and infinities: compared with the plain run only
      EXPECT_TRUE(close(got, g.ref(x, rows), 1e-4, 1e-4));
    }
  }
}

// A replayed run issues the recorded dispatches alone (its input is read where the caller's
// tensor lies: no copy), and allocates nothing.
TEST(ModelReplay, ReplayedRunsOnlyReplay) {
  GLT_RNG(rng);
  const ThreeGemm g(rng);
  Model plain = load_model(g.path, false), replayed = load_model(g.path, true);
  Device& dev = device();
  Tensor x = Tensor::from_host(dev, uniform(rng, 34 * ThreeGemm::W), {1, 34, ThreeGemm::W});
  plain.run({{"x", x}});  // kernels compiled, variants tuned
  auto d0 = dev.dispatch_count();
  plain.run({{"x", x}});
  const auto plain_dispatches = dev.dispatch_count() - d0;
  replayed.run({{"x", x}});  // warm-up
  replayed.run({{"x", x}});  // captured
  for (int i = 0; i < 3; ++i) {
    Tensor xi = Tensor::from_host(dev, uniform(rng, 34 * ThreeGemm::W), {1, 34, ThreeGemm::W});
    dev.synchronize();
    d0 = dev.dispatch_count();
    const PoolStats p0 = dev.pool_stats();
    Tensor y = replayed.run({{"x", xi}}).at("y");
    EXPECT_EQ(dev.dispatch_count() - d0, plain_dispatches);  // the recording alone
    EXPECT_EQ(dev.pool_stats().hits + dev.pool_stats().misses, p0.hits + p0.misses);
    EXPECT_TRUE(close(y.to_vector(), g.ref(xi.to_vector(), 34), 1e-4, 1e-4));
  }
}

// replay_shapes: recurring shapes in turn keep their recordings (each replayed run issues the
// recording alone, reading the input in place, and takes no buffer from the pool; its outputs
// right); with fewer recordings kept than shapes in turn, the least recently run is dropped, so
// every run of the cycle runs plain (a new warm-up, taking its intermediates from the pool).
TEST(ModelReplay, SeveralShapesKeepTheirRecordings) {
  GLT_RNG(rng);
  const ThreeGemm g(rng);
  Model plain = load_model(g.path, false);
  Device& dev = device();
  const std::vector<std::int64_t> cycle = {34, 5, 1};
  std::map<std::int64_t, std::uint64_t> plain_dispatches;
  for (std::int64_t rows : cycle) {
    Tensor x = Tensor::from_host(dev, uniform(rng, rows * ThreeGemm::W), {1, rows, ThreeGemm::W});
    plain.run({{"x", x}});  // kernels compiled, variants tuned
    const auto d0 = dev.dispatch_count();
    plain.run({{"x", x}});
    plain_dispatches[rows] = dev.dispatch_count() - d0;
  }
  for (int kept : {3, 2}) {
    SCOPED_TRACE("replay_shapes " + std::to_string(kept));
    Model replayed = load_model(g.path, true, kept);
    for (int round = 0; round < 4; ++round)
      for (std::int64_t rows : cycle) {
        SCOPED_TRACE("round " + std::to_string(round) + ", rows " + std::to_string(rows));
        const auto x = uniform(rng, rows * ThreeGemm::W);
        Tensor xt = Tensor::from_host(dev, x, {1, rows, ThreeGemm::W});
        dev.synchronize();
        const auto d0 = dev.dispatch_count();
        const auto p0 = dev.pool_stats();
        const auto got = replayed.run({{"x", xt}}).at("y").to_vector();
        const auto dispatches = dev.dispatch_count() - d0;
        const auto p1 = dev.pool_stats();
        const auto acquired = (p1.hits + p1.misses) - (p0.hits + p0.misses);
        // Rounds 0 and 1: the warm-up and the captured run of each shape, then replays; with
        // two recordings kept for three shapes in turn, every run is a warm-up.
        if (kept == 3 && round >= 2) {
          EXPECT_EQ(dispatches, plain_dispatches[rows]) << "the recording alone";
          EXPECT_EQ(acquired, 0u) << "a replay takes no buffer";
        }
        if (kept == 2) {
          EXPECT_EQ(dispatches, plain_dispatches[rows]) << "a plain run";
          EXPECT_GT(acquired, 0u) << "a plain run takes its intermediates from the pool";
        }
        EXPECT_TRUE(close(got, g.ref(x, rows), 1e-4, 1e-4));
      }
  }
}

// A Reshape to a shape computed on the GPU from an input's values reads it back (the output's
// shape depends on data): the run cannot be captured and runs unrecorded, right for every value.
TEST(ModelReplay, RunsThatReadBackRunUnrecorded) {
  GLT_RNG(rng);
  B m(13);
  m.input("x", {3, 4}).input("s", {2}).output_any("y");
  auto& cast = m.node("Cast", {"s"}, {"shape"});
  B::attr_i(cast, "to", onnx::TensorProto::INT64);
  m.node("Reshape", {"x", "shape"}, {"y"});
  Model replayed = load_model(m.save("replay_reshape"), true);
  const std::vector<std::vector<float>> shapes = {{4, 3}, {2, 6}, {12, 1}, {6, 2}, {4, 3}};
  for (const auto& sv : shapes) {
    const auto x = uniform(rng, 12);
    auto out =
        replayed.run({{"x", Tensor::from_host(device(), x, {3, 4})}, {"s", Tensor::from_host(device(), sv, {2})}});
    const Tensor& y = out.at("y");
    EXPECT_EQ(y.shape(), (Shape{static_cast<std::int64_t>(sv[0]), static_cast<std::int64_t>(sv[1])}));
    EXPECT_TRUE(close(y.to_vector(), to_double(x), 0, 0));
  }
}

// Model::run_many: entries of several shapes (one of them twice) give each entry's plain run, bit
// for bit, and the float64 values, through the warm-ups, captures and replays of the shapes
// (rounds 0 and 1), then replays together (rounds 2 and 3): the second entry of a shape replays
// after the first's outputs were copied out, so both keep their own values.
TEST(ModelReplay, RunManyEqualsTheRunsInTurn) {
  GLT_RNG(rng);
  const ThreeGemm g(rng);
  Model plain = load_model(g.path, false), replayed = load_model(g.path, true, 3);
  Device& dev = device();
  const std::vector<std::int64_t> rows = {34, 5, 34, 1};
  for (int round = 0; round < 4; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::vector<std::vector<float>> xs;
    std::vector<std::map<std::string, Tensor>> ins;
    for (std::int64_t r : rows) {
      xs.push_back(uniform(rng, r * ThreeGemm::W));
      ins.push_back({{"x", Tensor::from_host(dev, xs.back(), {1, r, ThreeGemm::W})}});
    }
    const auto d0 = dev.dispatch_count();
    const auto outs = replayed.run_many(ins);
    const auto dispatches = dev.dispatch_count() - d0;
    ASSERT_EQ(outs.size(), rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      SCOPED_TRACE("entry " + std::to_string(i));
      const auto got = outs[i].at("y").to_vector();
      EXPECT_TRUE(close(got, to_double(plain.run(ins[i]).at("y").to_vector()), 0, 0));
      EXPECT_TRUE(close(got, g.ref(xs[i], rows[i]), 1e-4, 1e-4));
    }
    if (round >= 2) {  // replays (and one copy of the first entry's output), nothing planned
      std::uint64_t plain_dispatches = 0;
      for (const auto& in : ins) {
        const auto p0 = dev.dispatch_count();
        plain.run(in);
        plain_dispatches += dev.dispatch_count() - p0;
      }
      EXPECT_LE(dispatches, plain_dispatches + 1);
    }
  }
}

// Model::run_many of no entries runs nothing and leaves last_run() as the previous run left it
// (it reset it to an empty RunStats before), plain or replayed; one entry after it sets it again,
// with the dispatches of run() (a replayed entry's dispatches and barriers were 0 before). Sabotage: the
// early return dropped: 0 dispatches.
TEST(ModelReplay, RunManyOfNothingLeavesLastRun) {
  GLT_RNG(rng);
  const ThreeGemm g(rng);
  Device& dev = device();
  for (bool replay : {false, true}) {
    SCOPED_TRACE(replay ? "replayed" : "plain");
    Model m = load_model(g.path, replay, 2);
    const std::int64_t rows = 5;
    const std::map<std::string, Tensor> in = {
        {"x", Tensor::from_host(dev, uniform(rng, rows * ThreeGemm::W), {1, rows, ThreeGemm::W})}};
    for (int i = 0; i < 3; ++i) m.run(in);  // replayed: the warm-up, the capture, a replay
    const RunStats before = m.last_run();
    ASSERT_GT(before.dispatches, 0u);
    const auto d0 = dev.dispatch_count();
    EXPECT_TRUE(m.run_many({}).empty());
    EXPECT_EQ(dev.dispatch_count(), d0);
    const RunStats after = m.last_run();
    EXPECT_EQ(after.dispatches, before.dispatches);
    EXPECT_EQ(after.barriers, before.barriers);
    EXPECT_EQ(after.peak_bytes, before.peak_bytes);
    EXPECT_EQ(m.run_many({in}).size(), 1u);
    EXPECT_EQ(m.last_run().dispatches, before.dispatches);
    // the recording's (a replay may add one before its first step); a plain run's are its hazards':
    // none where its one dispatch writes a new buffer (the fused MLP's host-visible output, gemm5)
    if (replay) {
      EXPECT_GT(m.last_run().barriers, 0u);
    }
  }
}

// A replay makes its recording the most recently run (run() and run_many() alike): with two
// recordings kept, shapes A and B captured, then A replayed, a new shape C drops B's recording, not
// A's, so A replays again (no buffer taken from the pool) and B runs as a warm-up (it takes its
// intermediates). Sabotage: prepare_replay without its splice: A's recording goes, A takes buffers.
TEST(ModelReplay, AReplayKeepsItsRecordingLongest) {
  GLT_RNG(rng);
  const ThreeGemm g(rng);
  Device& dev = device();
  const auto input = [&](std::int64_t rows) {
    return std::map<std::string, Tensor>{
        {"x", Tensor::from_host(dev, uniform(rng, rows * ThreeGemm::W), {1, rows, ThreeGemm::W})}};
  };
  const auto acquired_by = [&](const Model& m, const std::map<std::string, Tensor>& in, bool many) {
    dev.synchronize();
    const auto p0 = dev.pool_stats();
    if (many) {
      m.run_many({in});
    } else {
      m.run(in);
    }
    const auto p1 = dev.pool_stats();
    return (p1.hits + p1.misses) - (p0.hits + p0.misses);
  };
  for (bool many : {false, true}) {
    SCOPED_TRACE(many ? "run_many" : "run");
    Model m = load_model(g.path, true, 2);
    const auto a = input(34), b = input(5), c = input(1);
    for (int i = 0; i < 2; ++i) m.run(a);  // warm-up, capture
    for (int i = 0; i < 2; ++i) m.run(b);
    EXPECT_EQ(acquired_by(m, a, many), 0u) << "A replays";
    m.run(c);  // a third shape: the least recently run recording goes
    EXPECT_EQ(acquired_by(m, a, many), 0u) << "A's recording was kept";
    EXPECT_GT(acquired_by(m, b, many), 0u) << "B's recording went: a warm-up";
  }
}

// A replayed run issues the barriers of a plain one (from_host, run, to_vector), not one more
// before its first dispatch: that step's captured barrier was for the capture's copy of the input,
// and the replay reads the caller's tensor (from_host: a copy, no shader write). Sabotage:
// Queue::replay issuing the first step's captured barrier: 4 against 3 on llvmpipe.
TEST(ModelReplay, ReplayedRunsIssueThePlainRunsBarriers) {
  GLT_RNG(rng);
  const ThreeGemm g(rng);
  Device& dev = device();
  Model plain = load_model(g.path, false), replayed = load_model(g.path, true);
  const auto e2e_barriers = [&](const Model& m) {
    const std::int64_t rows = 34;
    const auto x = uniform(rng, rows * ThreeGemm::W);
    const auto b0 = dev.barrier_count();
    Tensor xt = Tensor::from_host(dev, x, {1, rows, ThreeGemm::W});
    const auto got = m.run({{"x", xt}}).at("y").to_vector();
    EXPECT_TRUE(close(got, g.ref(x, rows), 1e-4, 1e-4));
    return dev.barrier_count() - b0;
  };
  for (int i = 0; i < 3; ++i) e2e_barriers(replayed);  // the warm-up, the capture, a replay
  e2e_barriers(plain);
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE("run " + std::to_string(i));
    EXPECT_EQ(e2e_barriers(replayed), e2e_barriers(plain));
  }
}
