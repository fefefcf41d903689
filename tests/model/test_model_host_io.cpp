// Model::run_host: host data in, host data out, the small inputs read and (replayed) the outputs
// written by the kernels in host-visible buffers. Checked bit for bit against Model::run on
// Tensor::from_bytes inputs, and against float64 references: plain and replayed, odd and 0-size
// shapes, hundreds of runs on the same buffers with new contents, outputs read by later nodes,
// an output that is an input, inputs bound in place by replays, and typed errors (threads with
// their own devices: test_model_run's ModelThreads). ctest also runs it with GLTENSOR_STAGING=copy (no persistently
// mapped buffers: every transfer a copy) and GLTENSOR_HOST_IO=copy.
#include <algorithm>
#include <cstring>

#include "gl_log.hpp"
#include "gltensor/gltensor.hpp"
#include "onnx_builder.hpp"
#include "runtime/settings.hpp"
#include "tensor/tensor_impl.hpp"
#include "test_util.hpp"
#include "three_gemm.hpp"

using namespace gltensor;
using namespace glt_test;
using B = OnnxBuilder;

namespace {

HostInput host_input(const std::vector<float>& v, const Shape& shape) {
  return HostInput{v.data(), v.size() * sizeof(float), shape, DType::f32};
}

std::vector<float> floats(const HostOutput& o) {
  std::vector<float> v(o.bytes.size() / sizeof(float));
  if (!v.empty()) std::memcpy(v.data(), o.bytes.data(), o.bytes.size());
  return v;
}

// Whether this device gives host-visible buffers (buffer storage, GLTENSOR_STAGING and
// GLTENSOR_HOST_IO not copy): the zero-copy path runs.
bool direct(Device& dev) { return detail::alloc_host(*dev.impl(), {1}, DType::f32, "test").defined(); }

bool host_visible(const Tensor& t) { return t.impl()->storage->block.host != nullptr; }

}  // namespace

// The three-Gemm model (the fused MLP on GPUs), plain and replayed: run_host's bytes are
// run()'s on the same inputs, across contents and row counts (odd, 1, 0), many runs each.
TEST(ModelHostIo, EqualsTheTensorPathBitForBit) {
  GLT_RNG(rng);
  const ThreeGemm g(rng, "host_io_three_gemm");
  Model plain = load_model(g.path, false), replayed = load_model(g.path, true);
  Device& dev = device();
  for (std::int64_t rows : {34, 34, 34, 34, 7, 7, 7, 7, 1, 1, 1, 1, 0, 0, 0, 34, 34}) {
    SCOPED_TRACE("rows " + std::to_string(rows));
    auto x = uniform(rng, static_cast<std::size_t>(rows * ThreeGemm::W));
    if (rows == 1) sprinkle_specials(x);
    const Shape s{1, rows, ThreeGemm::W};
    const auto want = plain.run({{"x", Tensor::from_host(dev, x, s)}}).at("y").to_bytes();
    for (Model* m : {&plain, &replayed}) {
      const auto out = m->run_host(dev, {{"x", host_input(x, s)}});
      ASSERT_EQ(out.size(), 1u);
      const HostOutput& y = out.at("y");
      EXPECT_EQ(y.shape, s);
      EXPECT_EQ(y.dtype, DType::f32);
      EXPECT_EQ(y.bytes, want) << (m == &plain ? "plain" : "replayed") << " run_host differs from run()";
      if (rows != 1) {
        EXPECT_TRUE(close(floats(y), g.ref(x, rows), 1e-4, 1e-4));
      }
    }
  }
}

// Hundreds of runs on the same host-visible input and output buffers with new contents each
// time, run_host and run() on tensors interleaved: each run sees its own input (a buffer is
// rewritten only after the work reading it is done) and returns its own output. A replayed
// run_host issues only the recording's dispatches (no copy in, none out) and allocates nothing.
TEST(ModelHostIo, ManyRunsOnTheSameBuffers) {
  GLT_RNG(rng);
  const ThreeGemm g(rng, "host_io_many");
  Model replayed = load_model(g.path, true);
  Model plain = load_model(g.path, false);
  Device& dev = device();
  const Shape s{1, 5, ThreeGemm::W};
  plain.run({{"x", Tensor::from_host(dev, uniform(rng, 5 * ThreeGemm::W), s)}});
  auto d0 = dev.dispatch_count();
  plain.run({{"x", Tensor::from_host(dev, uniform(rng, 5 * ThreeGemm::W), s)}});
  const auto plain_dispatches = dev.dispatch_count() - d0;
  for (int i = 0; i < 3; ++i) replayed.run_host(dev, {{"x", host_input(uniform(rng, 5 * ThreeGemm::W), s)}});
  const bool zero_copy = direct(dev);
  int wrong = 0;
  for (int i = 0; i < 300; ++i) {
    const auto x = uniform(rng, 5 * ThreeGemm::W);
    std::vector<float> y;
    if (i % 5 == 4) {  // a run on tensors between host runs (copies in and out, same recording)
      y = replayed.run({{"x", Tensor::from_host(dev, x, s)}}).at("y").to_vector();
    } else {
      d0 = dev.dispatch_count();
      const PoolStats p0 = dev.pool_stats();
      y = floats(replayed.run_host(dev, {{"x", host_input(x, s)}}).at("y"));
      EXPECT_EQ(dev.dispatch_count() - d0, plain_dispatches) << "run " << i;
      if (zero_copy) {  // (else each run uploads into a new pool tensor)
        EXPECT_EQ(dev.pool_stats().hits + dev.pool_stats().misses, p0.hits + p0.misses) << "run " << i;
      }
    }
    if (!close(y, g.ref(x, 5), 1e-4, 1e-4)) ++wrong;
  }
  EXPECT_EQ(wrong, 0);
  if (zero_copy) {  // the outputs the recording writes are host-visible now
    const Tensor y = replayed.run({{"x", Tensor::from_host(dev, uniform(rng, 5 * ThreeGemm::W), s)}}).at("y");
    EXPECT_TRUE(host_visible(y));
  }
}

// Outputs that later nodes read (y1 feeds y2 and y3), an output that is the graph's input (an
// Identity), odd shapes and two inputs: values right on every run, replayed or not, with new
// contents each run (an output aliasing an input follows the input).
TEST(ModelHostIo, OutputsReadByLaterNodesAndOutputsThatAreInputs) {
  GLT_RNG(rng);
  B m(13);
  m.input("a", {3, 7}).input("b", {3, 7}).output("y1", {3, 7}).output("y2", {3, 7}).output("y3", {3, 7});
  m.output("ya", {3, 7});
  m.node("Add", {"a", "b"}, {"s"});
  m.node("Relu", {"s"}, {"y1"});
  m.node("Mul", {"y1", "b"}, {"y2"});
  m.node("Sub", {"y2", "y1"}, {"y3"});
  m.node("Identity", {"a"}, {"ya"});
  const std::string path = m.save("host_io_outputs");
  Device& dev = device();
  for (bool rep : {false, true}) {
    Model model = load_model(path, rep);
    for (int run = 0; run < 8; ++run) {
      SCOPED_TRACE(std::string(rep ? "replayed" : "plain") + ", run " + std::to_string(run));
      const auto a = uniform(rng, 21), b = uniform(rng, 21);
      const auto out = model.run_host(dev, {{"a", host_input(a, {3, 7})}, {"b", host_input(b, {3, 7})}});
      std::vector<double> y1(21), y2(21), y3(21);
      for (int i = 0; i < 21; ++i) {
        y1[i] = std::max(0.0f, a[i] + b[i]);
        y2[i] = static_cast<float>(y1[i]) * b[i];
        y3[i] = static_cast<float>(y2[i]) - static_cast<float>(y1[i]);
      }
      EXPECT_TRUE(close(floats(out.at("y1")), y1, 0, 0));
      EXPECT_TRUE(close(floats(out.at("y2")), y2, 0, 0));
      EXPECT_TRUE(close(floats(out.at("y3")), y3, 0, 0));
      EXPECT_TRUE(close(floats(out.at("ya")), to_double(a), 0, 0));
      // run() on tensors between host runs: the same values, its own inputs' contents.
      const auto c = uniform(rng, 21);
      auto t = model.run({{"a", Tensor::from_host(dev, c, {3, 7})}, {"b", Tensor::from_host(dev, b, {3, 7})}});
      EXPECT_TRUE(close(t.at("ya").to_vector(), to_double(c), 0, 0));
    }
  }
}

// The captured run of run_host moves each output into a host-visible buffer by a copy
// (Capture::move_storage): every copy follows a barrier with GL_BUFFER_UPDATE_BARRIER_BIT after
// the last dispatch, also for y1, whose write a later dispatch's barrier (y2's read of t) cleared
// from the queue's hazard sets. llvmpipe runs copies in order, so the GL calls' order is the check
// (tests/gl_log.hpp); the values too. Sabotage: move_storage's barrier_for_host (before this
// test): y1's copy unbarriered.
TEST(ModelHostIo, CapturedOutputsMovedAfterABarrier) {
  GLT_RNG(rng);
  Device& dev = device();
  if (!direct(dev)) GTEST_SKIP() << "no host-visible buffers here";
  B m(13);
  m.input("a", {4, 8}).output("y1", {4, 8}).output("y2", {4, 8});
  const auto w1 = uniform(rng, 64), w2 = uniform(rng, 64);
  m.init("w1", {8, 8}, w1).init("w2", {8, 8}, w2);
  m.node("MatMul", {"a", "w1"}, {"y1"});
  m.node("MatMul", {"a", "w2"}, {"t"});
  m.node("Softmax", {"t"}, {"y2"});
  const std::string path = m.save("host_io_moved_outputs");
  Model model = load_model(path, true);
  for (int run = 0; run < 3; ++run) {  // the warm-up, the captured run, a replay
    SCOPED_TRACE("run " + std::to_string(run));
    const auto a = uniform(rng, 32);
    std::vector<GlCall> log;
    gl_log = &log;
    const auto out = model.run_host(dev, {{"a", host_input(a, {4, 8})}});
    gl_log = nullptr;
    if (run == 1) {
      EXPECT_NE(gl_order(log).find('c'), std::string::npos) << "the outputs moved by copies";
      EXPECT_TRUE(copies_see_dispatch_writes(log)) << gl_order(log);
    }
    std::vector<double> y1(32);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 8; ++j) {
        double acc = 0;
        for (int k = 0; k < 8; ++k) acc += static_cast<double>(a[i * 8 + k]) * w1[k * 8 + j];
        y1[i * 8 + j] = acc;
      }
    EXPECT_TRUE(close(floats(out.at("y1")), y1, 1e-5, 1e-5));
  }
}

// A replay reads each input where the caller's tensor lies (no copy dispatch) when it is
// contiguous from element 0; a view elsewhere is copied in. Both give the plain run's values.
TEST(ModelHostIo, ReplaysReadTensorInputsInPlace) {
  GLT_RNG(rng);
  const ThreeGemm g(rng, "host_io_rebind");
  Model plain = load_model(g.path, false), replayed = load_model(g.path, true);
  Device& dev = device();
  const Shape s{1, 6, ThreeGemm::W};
  Tensor x0 = Tensor::from_host(dev, uniform(rng, 6 * ThreeGemm::W), s);
  plain.run({{"x", x0}});
  auto d0 = dev.dispatch_count();
  plain.run({{"x", x0}});
  const auto plain_dispatches = dev.dispatch_count() - d0;
  replayed.run({{"x", x0}});
  replayed.run({{"x", x0}});  // captured
  for (int i = 0; i < 6; ++i) {
    const auto x = uniform(rng, 7 * ThreeGemm::W);
    Tensor big = Tensor::from_host(dev, x, {1, 7, ThreeGemm::W});
    const bool view = i % 2 == 1;
    Tensor xi =
        view ? big.narrow(1, 1, 6) : Tensor::from_host(dev, std::vector<float>(x.begin(), x.begin() + 6 * 96), s);
    dev.synchronize();
    d0 = dev.dispatch_count();
    Tensor y = replayed.run({{"x", xi}}).at("y");
    EXPECT_EQ(dev.dispatch_count() - d0, plain_dispatches + (view ? 1 : 0)) << "run " << i;
    // (the plain run on a copy from element 0: the fused MLP takes no view off element 0)
    EXPECT_EQ(y.to_bytes(), plain.run({{"x", xi.clone()}}).at("y").to_bytes()) << "run " << i;
    EXPECT_TRUE(close(y.to_vector(), g.ref(xi.to_vector(), 6), 1e-4, 1e-4)) << "run " << i;
  }
}

// Bad host inputs: a typed error naming the input, its shape and the bytes; the model and the
// device go on working.
TEST(ModelHostIo, BadInputsThrowTypedErrors) {
  GLT_RNG(rng);
  const ThreeGemm g(rng, "host_io_errors");
  Model model = load_model(g.path, true);
  Device& dev = device();
  const auto x = uniform(rng, 2 * ThreeGemm::W);
  const Shape s{1, 2, ThreeGemm::W};
  auto expect_error = [&](const std::map<std::string, HostInput>& in, const std::string& part) {
    try {
      model.run_host(dev, in);
      ADD_FAILURE() << "no error; expected one naming " << part;
    } catch (const ModelError& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  HostInput short_one = host_input(x, s);
  short_one.nbytes -= 4;
  expect_error({{"x", short_one}}, "needs 768 bytes; given 764");
  expect_error({{"x", HostInput{nullptr, x.size() * 4, s, DType::f32}}}, "null pointer");
  expect_error({{"x", host_input(x, {1, -2, ThreeGemm::W})}}, "negative size");
  expect_error({{"x", host_input(x, {2, ThreeGemm::W})}}, "has shape [2, 96]");
  expect_error({}, "is missing");
  expect_error({{"x", host_input(x, s)}, {"z", host_input(x, s)}}, "'z' is not a graph input");
  const auto y = floats(model.run_host(dev, {{"x", host_input(x, s)}}).at("y"));
  EXPECT_TRUE(close(y, g.ref(x, 2), 1e-4, 1e-4));
}

// run()'s replayed outputs (host-visible since gemm4, where the device has such buffers) as the
// caller uses them: fed back as the same model's input (copied into its captured input: the
// recording writes that buffer), fed to another replayed model (read in place from host memory),
// read by a later kernel, and kept across runs by clone() while the next replays overwrite them.
// Each bit for bit against the plain model on the same values (review18).
TEST(ModelHostIo, RunOutputsFedBackReadByKernelsAndKept) {
  GLT_RNG(rng);
  const ThreeGemm g(rng, "host_io_fed_back");
  Model plain = load_model(g.path, false), replayed = load_model(g.path, true), other = load_model(g.path, true);
  Device& dev = device();
  const Shape s{1, 6, ThreeGemm::W};
  auto scaled = [](const Tensor& t) { return t * 0.25; };  // keeps the chain's values finite and small
  Tensor x = Tensor::from_host(dev, uniform(rng, 6 * ThreeGemm::W), s);
  Tensor xp = x.clone();
  std::vector<Tensor> kept;
  std::vector<std::vector<std::uint8_t>> want;
  for (int i = 0; i < 8; ++i) {  // the warm-up, the captured run, replays
    SCOPED_TRACE("run " + std::to_string(i));
    Tensor y = replayed.run({{"x", x}}).at("y");
    Tensor yp = plain.run({{"x", xp}}).at("y");
    if (i >= 1 && direct(dev)) {
      EXPECT_TRUE(host_visible(y)) << "the recording's output in host memory";
    }
    EXPECT_EQ(y.to_bytes(), yp.to_bytes());
    // another replayed model reading it in place, and a kernel reading it
    EXPECT_EQ(other.run({{"x", y}}).at("y").to_bytes(), plain.run({{"x", yp.clone()}}).at("y").to_bytes());
    EXPECT_EQ(scaled(y).to_bytes(), scaled(yp).to_bytes());
    kept.push_back(y.clone());
    want.push_back(yp.to_bytes());
    // fed back: the next run's input is this run's output (scaled), or the output itself
    x = i % 2 == 0 ? scaled(y) : y;
    xp = i % 2 == 0 ? scaled(yp) : yp.clone();
  }
  for (std::size_t i = 0; i < kept.size(); ++i) EXPECT_EQ(kept[i].to_bytes(), want[i]) << "clone of run " << i;
}

// run()'s plain outputs written by the fused MLP (gemm5: where they are at most
// Settings::host_output_bytes, 256 KiB, in host-visible buffers that to_vector reads without a copy,
// as a replay's): against the float64 reference with fresh inputs, bit for bit against
// GLTENSOR_HOST_IO=copy (device memory, read through a copy) and the unfused plan's graph; rows 1,
// odd, 34 and one row past the limit (device memory); each run's output a new tensor that the next runs leave as it
// was, read by a kernel, fed back as the model's input. Sabotage: host_out inverted in ops_fused.cpp (fails: not
// host-visible).
TEST(ModelHostIo, PlainFusedMlpOutputsInHostMemory) {
  GLT_RNG(rng);
  const ThreeGemm g(rng, "host_io_plain_fused");
  Device& dev = device();
  const bool zero_copy = direct(dev);
  ScopedSettings s;
  const bool as_set = s->direct_host_io;  // (ctest's GLTENSOR_HOST_IO=copy entry: false)
  s->fused_mlp = 1;                       // the GPUs' plan on any device
  Model m = load_model(g.path, false);
  s->direct_host_io = false;
  Model copy = load_model(g.path, false);
  s->fused_mlp = 0;
  Model unfused = load_model(g.path, false);
  const std::size_t limit = s->host_output_bytes, row_bytes = ThreeGemm::W * 4;
  const auto past = static_cast<std::int64_t>(std::min<std::size_t>(limit / row_bytes + 1, 8192));
  for (std::int64_t rows : {std::int64_t{34}, std::int64_t{1}, std::int64_t{7}, past}) {
    SCOPED_TRACE("rows " + std::to_string(rows));
    const Shape shape{1, rows, ThreeGemm::W};
    std::vector<Tensor> kept;
    std::vector<std::vector<double>> want;
    for (int i = 0; i < 3; ++i) {
      const auto xv = uniform(rng, static_cast<std::size_t>(rows * ThreeGemm::W));
      const Tensor x = Tensor::from_host(dev, xv, shape);
      s->direct_host_io = as_set;
      s->fused_mlp = 1;
      const Tensor y = m.run({{"x", x}}).at("y");
      const bool small = static_cast<std::size_t>(rows) * row_bytes <= limit;
      s->direct_host_io = false;
      EXPECT_EQ(host_visible(y), small && zero_copy) << "run " << i;
      EXPECT_FALSE(small && host_visible(copy.run({{"x", x}}).at("y")));
      EXPECT_EQ(y.to_bytes(), copy.run({{"x", x}}).at("y").to_bytes()) << "run " << i;
      s->fused_mlp = 0;
      EXPECT_TRUE(close(y.to_vector(), to_double(unfused.run({{"x", x}}).at("y").to_vector()), 1e-4, 1e-5));
      s->fused_mlp = 1;
      s->direct_host_io = as_set;
      want.push_back(g.ref(xv, rows));
      EXPECT_TRUE(close(y.to_vector(), want.back(), 1e-4, 1e-4)) << "run " << i;
      kept.push_back(y);
    }
    // every run's output kept as it was, read by a kernel, and fed back as the next input
    for (std::size_t i = 0; i < kept.size(); ++i) {
      EXPECT_TRUE(close(kept[i].to_vector(), want[i], 1e-4, 1e-4)) << "kept output of run " << i;
      EXPECT_EQ((kept[i] * 0.25).to_bytes(), (kept[i].clone() * 0.25).to_bytes());
    }
    const Tensor fed = kept[0] * 0.25;
    const Tensor y2 = m.run({{"x", fed}}).at("y");
    s->direct_host_io = false;
    EXPECT_EQ(y2.to_bytes(), copy.run({{"x", fed.clone()}}).at("y").to_bytes());
    s->direct_host_io = as_set;
  }
}

// A captured run whose outputs' move into host-visible buffers would pass the device's memory
// limit keeps them where they are and returns them (it threw OutOfMemory after a capture that
// fitted, review18); its replays stay right. The limit: the allocations of a probe model's capture
// (a twin's, measured) plus less than the output's size class. Sabotage: the catch in
// outputs_to_host removed (this test then fails with OutOfMemory). Unfused (GLTENSOR_FUSED_MLP=0):
// the fused MLP writes its output into a host-visible buffer from the start, with no move (gemm5).
TEST(ModelHostIo, OutputsMoveSkippedAtTheMemoryLimit) {
  GLT_RNG(rng);
  Device& dev = device();
  if (!direct(dev)) GTEST_SKIP() << "no host-visible buffers here";
  ScopedSettings unfused;
  unfused->fused_mlp = 0;
  const ThreeGemm g(rng, "host_io_move_limit");
  Model plain = load_model(g.path, false), probe = load_model(g.path, true), model = load_model(g.path, true);
  const Shape s{1, 34, ThreeGemm::W};  // 13056 bytes: a 16 KiB size class
  struct Unlimit {
    Device& d;
    ~Unlimit() { d.set_memory_limit(0); }
  } unlimit{dev};
  auto allocated = [&] {
    dev.synchronize();
    dev.trim();
    return dev.pool_stats().bytes_allocated;
  };
  Tensor x = Tensor::from_host(dev, uniform(rng, 34 * ThreeGemm::W), s);
  probe.run({{"x", x}});
  const std::size_t p0 = allocated();
  probe.run({{"x", x}});  // captured: the inputs' copies, the recording's buffers, the outputs
  const std::size_t capture = allocated() - p0;
  model.run({{"x", x}});
  std::vector<Tensor> xs;
  std::vector<std::vector<std::uint8_t>> want;
  for (int i = 0; i < 4; ++i) {  // (the plain runs before the limit: their own buffers)
    xs.push_back(Tensor::from_host(dev, uniform(rng, 34 * ThreeGemm::W), s));
    want.push_back(plain.run({{"x", xs.back()}}).at("y").to_bytes());
  }
  dev.set_memory_limit(allocated() + capture + 8192);
  for (int i = 0; i < 4; ++i) {  // the captured run, replays
    SCOPED_TRACE("run " + std::to_string(i));
    Tensor y = model.run({{"x", xs[i]}}).at("y");
    EXPECT_FALSE(host_visible(y)) << "the limit left no room for the move (the test's premise)";
    EXPECT_EQ(y.to_bytes(), want[i]);
  }
}

// A capture that fails with OutOfMemory leaves these shapes warm without its copies of the
// inputs: the next run, with the limit lifted, captures its own inputs (it read the failed run's
// copies before: the previous run's values, review18). Sabotage: the catch-all reset in
// run_replayed removed (the third run returns the second's values).
TEST(ModelHostIo, CaptureOutOfMemoryLeavesNoStaleInputs) {
  GLT_RNG(rng);
  Device& dev = device();
  const ThreeGemm g(rng, "host_io_capture_oom");
  Model plain = load_model(g.path, false), model = load_model(g.path, true);
  const Shape s{1, 34, ThreeGemm::W};
  struct Unlimit {
    Device& d;
    ~Unlimit() { d.set_memory_limit(0); }
  } unlimit{dev};
  auto run = [&](Model& m, const Tensor& x) { return m.run({{"x", x}}).at("y").to_bytes(); };
  Tensor x0 = Tensor::from_host(dev, uniform(rng, 34 * ThreeGemm::W), s);
  EXPECT_EQ(run(model, x0), run(plain, x0));  // the warm-up
  Tensor x1 = Tensor::from_host(dev, uniform(rng, 34 * ThreeGemm::W), s);
  dev.synchronize();
  dev.trim();
  // room for the input's copy (16 KiB), not for the capture's output
  dev.set_memory_limit(dev.pool_stats().bytes_allocated + 16384 + 8192);
  EXPECT_THROW(run(model, x1), OutOfMemory);
  dev.set_memory_limit(0);
  for (int i = 0; i < 4; ++i) {  // the captured run, replays
    SCOPED_TRACE("run " + std::to_string(i));
    Tensor xi = Tensor::from_host(dev, uniform(rng, 34 * ThreeGemm::W), s);
    EXPECT_EQ(run(model, xi), run(plain, xi));
  }
}
