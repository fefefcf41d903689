// Recording: capture once, replay many times (gltensor/recording.hpp). Every replay is checked
// against a float64 reference on fresh input contents and against the unrecorded path.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "gltensor/gltensor.hpp"
#include "runtime/capture.hpp"
#include "runtime/guard.hpp"
#include "runtime/launch.hpp"
#include "runtime/storage.hpp"
#include "tensor/tensor_impl.hpp"
#include "test_util.hpp"

using namespace glt_test;
using namespace gltensor;

namespace {

Tensor upload(const std::vector<float>& v, const Shape& s) { return Tensor::from_host(device(), v, s); }

// Runs `fn` eagerly on copies of `inputs`, and captured: then, `replays` times, new contents for
// the captured inputs (copy_), a replay, and the outputs checked against `ref` (float64) and
// against `fn` run without recording on the same contents.
template <typename Fn, typename Ref>
void check_replays(std::mt19937_64& rng, std::vector<Shape> shapes, Fn fn, Ref ref, double tol, int replays = 4) {
  Device& dev = device();
  std::vector<Tensor> in;
  for (const auto& s : shapes) in.push_back(upload(uniform(rng, static_cast<std::size_t>(numel_of(s))), s));
  Tensor out;
  Recording rec = Recording::capture(dev, [&] { out = fn(in); });
  ASSERT_GT(rec.dispatches(), 0u);
  for (int r = 0; r < replays; ++r) {
    SCOPED_TRACE("replay " + std::to_string(r));
    std::vector<std::vector<float>> host;
    for (std::size_t k = 0; k < in.size(); ++k) {
      host.push_back(uniform(rng, static_cast<std::size_t>(numel_of(shapes[k]))));
      if (r == replays - 1) sprinkle_specials(host.back());
      in[k].copy_(upload(host.back(), shapes[k]));  // no synchronize: the replay must wait for it
    }
    const PoolStats before = dev.pool_stats();
    const auto d0 = dev.dispatch_count();
    rec.replay();
    EXPECT_EQ(dev.dispatch_count() - d0, rec.dispatches());
    EXPECT_EQ(dev.pool_stats().hits + dev.pool_stats().misses, before.hits + before.misses) << "replay allocated";
    std::vector<Tensor> fresh;
    for (std::size_t k = 0; k < in.size(); ++k) fresh.push_back(upload(host[k], shapes[k]));
    const std::vector<float> eager = fn(fresh).to_vector();
    const std::vector<float> got = out.to_vector();
    EXPECT_TRUE(close(got, to_double(eager), 0, 0)) << "replay differs from the unrecorded path";
    if (r < replays - 1) {  // the last contents have NaN and infinities: compared with the eager path only
      EXPECT_TRUE(close(got, ref(host), tol, tol));
    }
  }
}

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

}  // namespace

TEST(Recording, ElementwiseChain) {
  GLT_RNG(rng);
  const std::int64_t n = 1001;
  check_replays(
      rng, {{n}, {n}}, [](const std::vector<Tensor>& x) { return sigmoid(x[0] * 0.5 + 1.0) * x[1] - x[0]; },
      [&](const std::vector<std::vector<float>>& h) {
        std::vector<double> r(n);
        for (std::int64_t i = 0; i < n; ++i) r[i] = sigmoid(h[0][i] * 0.5 + 1.0) * h[1][i] - h[0][i];
        return r;
      },
      1e-5);
}

TEST(Recording, GemmLayers) {
  GLT_RNG(rng);
  const std::int64_t m = 34, k = 96, n = 33;
  const auto w1 = uniform(rng, k * k), b1 = uniform(rng, k), w2 = uniform(rng, n * k), b2 = uniform(rng, n);
  Tensor W1 = upload(w1, {k, k}), B1 = upload(b1, {k}), W2 = upload(w2, {n, k}), B2 = upload(b2, {n});
  check_replays(
      rng, {{m, k}}, [&](const std::vector<Tensor>& x) { return linear(relu(linear(x[0], W1, B1)), W2, B2); },
      [&](const std::vector<std::vector<float>>& h) {
        std::vector<double> hid(m * k), r(m * n);
        for (std::int64_t i = 0; i < m; ++i)
          for (std::int64_t j = 0; j < k; ++j) {
            double s = b1[j];
            for (std::int64_t t = 0; t < k; ++t) s += double(h[0][i * k + t]) * w1[j * k + t];
            hid[i * k + j] = std::max(s, 0.0);
          }
        for (std::int64_t i = 0; i < m; ++i)
          for (std::int64_t j = 0; j < n; ++j) {
            double s = b2[j];
            for (std::int64_t t = 0; t < k; ++t) s += hid[i * k + t] * w2[j * k + t];
            r[i * n + j] = s;
          }
        return r;
      },
      1e-4);
}

TEST(Recording, Conv2d) {
  GLT_RNG(rng);
  const std::int64_t N = 2, C = 3, H = 9, W = 7, O = 5;
  const auto w = uniform(rng, O * C * 9), b = uniform(rng, O);
  Tensor Wt = upload(w, {O, C, 3, 3}), Bt = upload(b, {O});
  check_replays(
      rng, {{N, C, H, W}}, [&](const std::vector<Tensor>& x) { return conv2d(x[0], Wt, Bt, Conv2dOptions::pad(1)); },
      [&](const std::vector<std::vector<float>>& h) {
        std::vector<double> r(N * O * H * W);
        for (std::int64_t n = 0; n < N; ++n)
          for (std::int64_t o = 0; o < O; ++o)
            for (std::int64_t y = 0; y < H; ++y)
              for (std::int64_t x = 0; x < W; ++x) {
                double s = b[o];
                for (std::int64_t c = 0; c < C; ++c)
                  for (std::int64_t dy = 0; dy < 3; ++dy)
                    for (std::int64_t dx = 0; dx < 3; ++dx) {
                      const std::int64_t iy = y + dy - 1, ix = x + dx - 1;
                      if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                      s += double(h[0][((n * C + c) * H + iy) * W + ix]) * w[((o * C + c) * 3 + dy) * 3 + dx];
                    }
                r[((n * O + o) * H + y) * W + x] = s;
              }
        return r;
      },
      1e-4);
}

TEST(Recording, Softmax) {
  GLT_RNG(rng);
  const std::int64_t rows = 7, cols = 301;
  check_replays(
      rng, {{rows, cols}}, [](const std::vector<Tensor>& x) { return softmax(x[0] * 3.0, -1); },
      [&](const std::vector<std::vector<float>>& h) {
        std::vector<double> r(rows * cols);
        for (std::int64_t i = 0; i < rows; ++i) {
          double mx = -INFINITY, sum = 0;
          for (std::int64_t j = 0; j < cols; ++j) mx = std::max(mx, 3.0 * h[0][i * cols + j]);
          for (std::int64_t j = 0; j < cols; ++j) sum += std::exp(3.0 * h[0][i * cols + j] - mx);
          for (std::int64_t j = 0; j < cols; ++j) r[i * cols + j] = std::exp(3.0 * h[0][i * cols + j] - mx) / sum;
        }
        return r;
      },
      1e-5);
}

TEST(Recording, CausalAttention) {
  GLT_RNG(rng);
  const std::int64_t B = 2, L = 9, E = 16;
  check_replays(
      rng, {{B, L, E}, {B, L, E}, {B, L, E}},
      [](const std::vector<Tensor>& x) {
        AttentionOptions o;
        o.is_causal = true;
        return scaled_dot_product_attention(x[0], x[1], x[2], o);
      },
      [&](const std::vector<std::vector<float>>& h) {
        std::vector<double> r(B * L * E);
        const double scale = 1 / std::sqrt(double(E));
        for (std::int64_t b = 0; b < B; ++b)
          for (std::int64_t i = 0; i < L; ++i) {
            std::vector<double> s(i + 1);
            double mx = -INFINITY, sum = 0;
            for (std::int64_t j = 0; j <= i; ++j) {
              double d = 0;
              for (std::int64_t e = 0; e < E; ++e) d += double(h[0][(b * L + i) * E + e]) * h[1][(b * L + j) * E + e];
              s[j] = d * scale;
              mx = std::max(mx, s[j]);
            }
            for (auto& v : s) sum += (v = std::exp(v - mx));
            for (std::int64_t e = 0; e < E; ++e) {
              double o = 0;
              for (std::int64_t j = 0; j <= i; ++j) o += s[j] / sum * h[2][(b * L + j) * E + e];
              r[(b * L + i) * E + e] = o;
            }
          }
        return r;
      },
      1e-4);
}

// A grid past the device's workgroup count is split into several dispatches, each with its own
// u_group_base: all of them are replayed with their own values.
TEST(Recording, SplitGrids) {
  GLT_RNG(rng);
  const ScopedDispatchLimit limit(3);
  const std::int64_t n = 100003;  // 391 workgroups of 256: rows of 3, dispatches of 3 rows
  check_replays(
      rng, {{n}}, [](const std::vector<Tensor>& x) { return x[0] * 2.0 + 1.0; },
      [&](const std::vector<std::vector<float>>& h) {
        std::vector<double> r(n);
        for (std::int64_t i = 0; i < n; ++i) r[i] = double(float(h[0][i] * 2.0f)) + 1.0;
        return r;
      },
      1e-6);
}

// Between replays the same programs run with other uniforms (other sizes, other scalars): a
// replay sets its own again.
TEST(Recording, OtherWorkOnTheSameProgramsBetweenReplays) {
  Device& dev = device();
  Tensor x = full(dev, {1000}, 1.0), y;
  Recording rec = Recording::capture(dev, [&] { y = x * 2.0 + 1.0; });
  for (int r = 0; r < 3; ++r) {
    // The same kernels (a vectorized form for sizes divisible by 4) with other scalars and sizes.
    Tensor other = full(dev, {996}, 5.0) * 3.0 + 7.0, same_n = full(dev, {1000}, 1.0) * -4.0 + 0.5;
    x.fill_(r);
    rec.replay();
    EXPECT_EQ(y.to_vector(), std::vector<float>(1000, 2.0f * r + 1.0f));
    EXPECT_EQ(other.to_vector(), std::vector<float>(996, 22.0f));
    EXPECT_EQ(same_n.to_vector(), std::vector<float>(1000, -3.5f));
    Tensor after = y + 1.0;  // reads the replay's output: needs its barrier
    EXPECT_EQ(after.to_vector(), std::vector<float>(1000, 2.0f * r + 2.0f));
  }
}

// Recording::replay_together: two independent recordings of the same chain of dependent ops at
// two sizes (the same programs, other sizes and scalars in their uniforms) give what each gives
// replayed alone, bit for bit, and the float64 values, and share their barriers: as many as one
// of them replayed alone issues (each barrier serves a step of both). A recording that reads
// another's output replays after it (as replay() in turn would), and the same recording twice
// too.
TEST(Recording, ReplayTogether) {
  GLT_RNG(rng);
  Device& dev = device();
  const std::int64_t n1 = 1000, n2 = 996;
  // The scalar product's program twice in each chain: its second dispatch in a capture sets only
  // the scalar that changed, so the other chain's size in between must be set again.
  const auto chain = [](const Tensor& x, double a, double b) { return sigmoid(x * a + b) * x * (a + 1) - b; };
  const auto ref = [](const std::vector<float>& x, double a, double b) {
    std::vector<double> r(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) r[i] = sigmoid(x[i] * a + b) * x[i] * (a + 1) - b;
    return r;
  };
  Tensor x1 = upload(uniform(rng, n1), {n1}), x2 = upload(uniform(rng, n2), {n2}), y1, y2, y3;
  Recording r1 = Recording::capture(dev, [&] { y1 = chain(x1, 0.5, 1.0); });
  Recording r2 = Recording::capture(dev, [&] { y2 = chain(x2, -2.0, 0.25); });
  Recording r3 = Recording::capture(dev, [&] { y3 = y1 * 3.0 + 1.0; });  // reads r1's output
  ASSERT_GT(r1.dispatches(), 2u);
  ASSERT_EQ(r1.dispatches(), r2.dispatches());
  // The barriers of r1 replayed alone after its input was written (a barrier before its first step
  // included), with no batch end in between.
  dev.synchronize();
  x1.copy_(upload(uniform(rng, n1), {n1}));
  std::uint64_t b0 = dev.barrier_count();
  r1.replay();
  const std::uint64_t alone = dev.barrier_count() - b0;
  ASSERT_GE(alone, r1.dispatches() - 1) << "a chain of dependent dispatches";
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    auto h1 = uniform(rng, n1), h2 = uniform(rng, n2);
    if (round == 2) sprinkle_specials(h1);
    Tensor u1 = upload(h1, {n1}), u2 = upload(h2, {n2});
    dev.synchronize();
    x1.copy_(u1);
    x2.copy_(u2);
    b0 = dev.barrier_count();
    const auto d0 = dev.dispatch_count();
    const std::vector<const Recording*> both = {&r1, &r2};
    Recording::replay_together(both);
    EXPECT_EQ(dev.dispatch_count() - d0, r1.dispatches() + r2.dispatches());
    EXPECT_EQ(dev.barrier_count() - b0, alone) << "the two chains' steps share each barrier";
    const auto got1 = y1.to_vector(), got2 = y2.to_vector();
    EXPECT_TRUE(close(got1, to_double(chain(u1, 0.5, 1.0).to_vector()), 0, 0)) << "differs from the eager ops";
    EXPECT_TRUE(close(got2, to_double(chain(u2, -2.0, 0.25).to_vector()), 0, 0)) << "differs from the eager ops";
    if (round < 2) {  // round 2's first input has NaN and infinities: compared with the eager ops only
      EXPECT_TRUE(close(got1, ref(h1, 0.5, 1.0), 1e-5, 1e-5));
    }
    EXPECT_TRUE(close(got2, ref(h2, -2.0, 0.25), 1e-5, 1e-5));
    // Dependent: r3 reads what r1 writes (new contents of x1), so it must see this replay's y1.
    const auto h3 = uniform(rng, n1);
    x1.copy_(upload(h3, {n1}));
    const std::vector<const Recording*> dependent = {&r1, &r3};
    Recording::replay_together(dependent);
    const auto y1v = y1.to_vector(), y3v = y3.to_vector();
    EXPECT_TRUE(close(y1v, ref(h3, 0.5, 1.0), 1e-5, 1e-5));
    EXPECT_TRUE(close(y3v, to_double((upload(y1v, {n1}) * 3.0 + 1.0).to_vector()), 0, 0))
        << "r3 ran before r1's replay wrote y1";
    const std::vector<const Recording*> twice = {&r2, &r2};
    Recording::replay_together(twice);
    EXPECT_TRUE(close(y2.to_vector(), to_double(got2), 0, 0));
  }
}

// Queue::replay_together decides each step's barrier by the hazard rules of a live dispatch
// (Queue::dispatch), one helper over the operands of both (Queue::hazards): for each rule, two
// independent captures of two dispatches of a probe kernel (binding 0 a scratch output of its
// own; the operand under test at SSBO binding 1, uniform block 0, or texture / image unit 0),
// whose live barriers and bits, and their interleaved replay's, are the rule's. Sabotage: the
// rule "an SSBO written after it was read" dropped from replay_together's view of the operands
// alone (write = false there): "ssbo write after read" and "ssbo write after block read" fail.
namespace {

struct ProbeStep {
  enum Kind { ssbo_read, ssbo_write, block, sample, image } kind;
};

struct HazardCase {
  const char* name;
  ProbeStep::Kind first, second;
  GLbitfield bits;  // the barrier between them (0: none)
};

}  // namespace

TEST(Recording, ReplayTogetherBarriersFollowTheLiveRules) {
  const auto dir = std::filesystem::temp_directory_path() / ("gltensor-hazard-probe-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "hazard_probe.comp") << "layout(local_size_x = LOCAL_X) in;\n"
                                              "layout(std430, binding = 0) buffer Out { float c[]; };\n"
                                              "void main() { c[0] = 1.0; }\n";
  ScopedSettings settings;
  settings->glsl_dir = dir;
  Device dev = Device::open();
  dev.set_auto_flush(1000000);
  detail::DeviceImpl& impl = *dev.impl();
  constexpr GLbitfield kBuf = detail::Queue::kBufferBits, kTex = detail::Queue::kTextureBits;
  const HazardCase cases[] = {
      {"ssbo read after write", ProbeStep::ssbo_write, ProbeStep::ssbo_read, kBuf},
      {"ssbo write after read", ProbeStep::ssbo_read, ProbeStep::ssbo_write, kBuf},
      {"ssbo write after write", ProbeStep::ssbo_write, ProbeStep::ssbo_write, kBuf},
      {"ssbo reads", ProbeStep::ssbo_read, ProbeStep::ssbo_read, 0},
      {"block read after ssbo write", ProbeStep::ssbo_write, ProbeStep::block, kBuf},
      {"ssbo write after block read", ProbeStep::block, ProbeStep::ssbo_write, kBuf},
      {"block reads", ProbeStep::block, ProbeStep::block, 0},
      {"sample after image write", ProbeStep::image, ProbeStep::sample, kTex},
      {"image write after sample", ProbeStep::sample, ProbeStep::image, kTex},
      {"image write after image write", ProbeStep::image, ProbeStep::image, kTex},
      {"samples", ProbeStep::sample, ProbeStep::sample, 0},
  };
  // Per capture: the operand under test (a buffer and a texture) and each step's scratch output.
  struct Operands {
    Tensor buffer, out[2];
    GLuint texture = 0;
  };
  Operands ops[2];
  {
    detail::Enter enter(impl, "test");
    for (Operands& o : ops) {
      glGenTextures(1, &o.texture);
      glBindTexture(GL_TEXTURE_2D, o.texture);
      glTexStorage2D(GL_TEXTURE_2D, 1, GL_R32F, 4, 4);
      glBindTexture(GL_TEXTURE_2D, 0);
    }
  }
  for (Operands& o : ops) {
    o.buffer = zeros(dev, {256});
    for (Tensor& t : o.out) t = zeros(dev, {1});
  }
  const auto step = [&](const Operands& o, int k, ProbeStep::Kind kind) {
    detail::Launch launch(impl, "hazard_probe");
    launch.program("hazard_probe.comp", std::string(), {1}).write(o.out[k]);
    detail::Storage& s = *o.buffer.impl()->storage;
    switch (kind) {
      case ProbeStep::ssbo_read:
        launch.bind(s, false);
        break;
      case ProbeStep::ssbo_write:
        launch.bind(s, true);
        break;
      case ProbeStep::block:
        launch.block(0, s, 0, 1024);
        break;
      case ProbeStep::sample:
        launch.texture(0, o.texture, 0);
        break;
      case ProbeStep::image:
        launch.image(0, o.texture, 0, GL_WRITE_ONLY, GL_R32F);
        break;
    }
    launch.loop_iterations(0).groups(1);
  };
  detail::Queue& q = impl.queue();
  for (const HazardCase& hc : cases) {
    SCOPED_TRACE(hc.name);
    const std::uint64_t expected = hc.bits ? 1 : 0;
    Recording recs[2];
    for (int c = 0; c < 2; ++c) {
      dev.synchronize();  // no hazard with earlier work
      const auto b0 = q.barriers();
      recs[c] = Recording::capture(dev, [&] {
        step(ops[c], 0, hc.first);
        step(ops[c], 1, hc.second);
      });
      EXPECT_EQ(q.barriers() - b0, expected) << "live, capture " << c;
      const auto& steps = detail::RecordingAccess::capture(recs[c])->steps;
      ASSERT_EQ(steps.size(), 2u);
      EXPECT_EQ(steps[0].barrier, 0u);
      EXPECT_EQ(steps[1].barrier, hc.bits) << "live, capture " << c;
    }
    dev.synchronize();
    const auto b0 = q.barriers();
    const std::vector<const Recording*> both = {&recs[0], &recs[1]};
    Recording::replay_together(both);
    EXPECT_EQ(q.barriers() - b0, expected) << "replayed together: one barrier for both captures' second steps";
    if (hc.bits) {
      EXPECT_EQ(q.last_barrier_bits(), hc.bits) << "replayed together";
    }
    dev.synchronize();
  }
  {
    detail::Enter enter(impl, "test");
    for (Operands& o : ops) glDeleteTextures(1, &o.texture);
  }
  std::filesystem::remove_all(dir);
}

// A null pointer among the recordings: ValueError naming its index (not a crash), before any
// replay, with the device still usable.
TEST(Recording, ReplayTogetherRejectsANullRecording) {
  Device& dev = device();
  Tensor x = full(dev, {64}, 2.0), y;
  Recording r = Recording::capture(dev, [&] { y = x * 3.0; });
  x.copy_(full(dev, {64}, 5.0));
  const std::vector<const Recording*> with_null = {&r, nullptr};
  try {
    Recording::replay_together(with_null);
    ADD_FAILURE() << "no ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("recording 1 of 2"), std::string::npos) << e.what();
  }
  EXPECT_EQ(y.to_vector(), std::vector<float>(64, 6.0f)) << "replayed before the check";
  const std::vector<const Recording*> just = {&r};
  Recording::replay_together(just);
  EXPECT_EQ(y.to_vector(), std::vector<float>(64, 15.0f));
}

// The caller drops its handles to the inputs: the recording keeps their buffers, which the pool
// may not hand to anyone else.
TEST(Recording, KeepsReleasedInputsAlive) {
  Device& dev = device();
  Tensor x = full(dev, {4096}, 3.0), y;
  Recording rec = Recording::capture(dev, [&] { y = x * x; });
  x = Tensor();
  EXPECT_GE(rec.buffers(), 2u);
  EXPECT_GE(rec.bytes(), 2u * 4096 * 4);
  std::vector<Tensor> others;
  for (int i = 0; i < 8; ++i) others.push_back(full(dev, {4096}, -1.0));  // would reuse x's buffer
  rec.replay();
  EXPECT_EQ(y.to_vector(), std::vector<float>(4096, 9.0f));
  for (auto& o : others) EXPECT_EQ(o.to_vector(), std::vector<float>(4096, -1.0f));
}

// A value that changes per replay is read from a tensor: a token id for an embedding lookup, as a
// decode step's position would be. An id out of range is reported after the replay.
TEST(Recording, PerReplayValuesFromATensor) {
  GLT_RNG(rng);
  Device& dev = device();
  const std::int64_t V = 50, D = 24;
  const auto table = uniform(rng, V * D);
  Tensor w = upload(table, {V, D});
  Tensor id = Tensor::from_host(dev, std::vector<std::int32_t>{0}, {1}), y;
  Recording rec = Recording::capture(dev, [&] { y = embedding(w, id) * 2.0; });
  for (int t : {7, 49, 0, 23}) {
    id.copy_(Tensor::from_host(dev, std::vector<std::int32_t>{t}, {1}));
    rec.replay();
    std::vector<double> ref(D);
    for (std::int64_t d = 0; d < D; ++d) ref[d] = 2.0 * table[t * D + d];
    EXPECT_TRUE(close(y.to_vector(), ref, 1e-6, 0)) << "token " << t;
  }
  id.copy_(Tensor::from_host(dev, std::vector<std::int32_t>{V + 3}, {1}));
  rec.replay();
  EXPECT_THROW(y.to_vector(), IndexError);
}

// Intermediates that die during the capture give their buffers to later ones, as without a
// capture: the recording holds about one run's peak, and replays stay right.
TEST(Recording, ReusesBuffersOfDeadIntermediates) {
  GLT_RNG(rng);
  Device& dev = device();
  const std::int64_t n = 1 << 18;  // 1 MiB of f32
  const auto h = uniform(rng, n);
  Tensor x = upload(h, {n}), y;
  Recording rec = Recording::capture(dev, [&] {
    Tensor t = x;
    for (int i = 0; i < 20; ++i) t = t * 1.01 + 0.5;
    y = t;
  });
  EXPECT_LE(rec.bytes(), 6u * n * 4) << "20 x 2 intermediates of 1 MiB each were kept apart";
  // The dead intermediates' buffers stay the recording's: new tensors get others.
  std::vector<Tensor> others;
  for (int i = 0; i < 6; ++i) others.push_back(full(dev, {n}, -1.0));
  for (int r = 0; r < 2; ++r) {
    const auto h2 = uniform(rng, n);
    x.copy_(upload(h2, {n}));
    rec.replay();
    std::vector<double> ref(n);
    for (std::int64_t j = 0; j < n; ++j) {
      float v = h2[j];
      for (int i = 0; i < 20; ++i) v = float(v * 1.01f) + 0.5f;
      ref[j] = v;
    }
    EXPECT_TRUE(close(y.to_vector(), ref, 1e-6, 1e-6));
    for (auto& o : others) EXPECT_EQ(o.to_vector(), std::vector<float>(n, -1.0f));
  }
}

// A decode step as issue 24 replays it: a token's projections appended to a K/V cache at a
// position read from a tensor, attention of the token over the cache up to that position (a
// mask computed on the GPU from the position), recorded once and replayed per token; token for
// token equal to the same step run unrecorded, and to a float64 reference.
TEST(Recording, DecodeStepWithAKvCache) {
  GLT_RNG(rng);
  Device& dev = device();
  const std::int64_t D = 16, S = 12;
  const auto wq = uniform(rng, D * D), wk = uniform(rng, D * D), wv = uniform(rng, D * D);
  const Tensor Wq = upload(wq, {D, D}), Wk = upload(wk, {D, D}), Wv = upload(wv, {D, D});
  struct Cache {
    Tensor k, v;
  };
  auto step = [&](const Tensor& x, const Tensor& pos, Cache& c) {
    const Tensor at = pos.reshape({1, 1}).expand({1, D});
    c.k.copy_(scatter(c.k, 0, at, matmul(x, Wk)));
    c.v.copy_(scatter(c.v, 0, at, matmul(x, Wv)));
    AttentionOptions o;
    o.attn_mask = le(arange(dev, S, DType::i32), pos).reshape({1, S});
    return scaled_dot_product_attention(matmul(x, Wq), c.k, c.v, o);
  };
  std::vector<std::vector<float>> xs;
  for (std::int64_t t = 0; t < S; ++t) xs.push_back(uniform(rng, D));
  Cache rc{zeros(dev, {S, D}), zeros(dev, {S, D})}, ec{zeros(dev, {S, D}), zeros(dev, {S, D})};
  Tensor x = upload(xs[0], {1, D}), pos = Tensor::from_host(dev, std::vector<std::int32_t>{0}, {1}), y;
  Recording rec = Recording::capture(dev, [&] { y = step(x, pos, rc); });  // token 0 runs here
  std::vector<std::vector<double>> K, V;
  for (std::int64_t t = 0; t < S; ++t) {
    SCOPED_TRACE("token " + std::to_string(t));
    const Tensor xt = upload(xs[t], {1, D});
    const Tensor pt = Tensor::from_host(dev, std::vector<std::int32_t>{static_cast<std::int32_t>(t)}, {1});
    if (t > 0) {
      x.copy_(xt);
      pos.copy_(pt);
      rec.replay();
    }
    const auto eager = step(xt, pt, ec).to_vector();
    const auto got = y.to_vector();
    EXPECT_TRUE(close(got, to_double(eager), 0, 0)) << "replay differs from the unrecorded step";
    auto proj = [&](const std::vector<float>& w) {
      std::vector<double> r(D);
      for (std::int64_t j = 0; j < D; ++j)
        for (std::int64_t i = 0; i < D; ++i) r[j] += double(xs[t][i]) * w[i * D + j];
      return r;
    };
    const auto q = proj(wq);
    K.push_back(proj(wk));
    V.push_back(proj(wv));
    std::vector<double> s(t + 1), ref(D);
    double mx = -INFINITY, sum = 0;
    for (std::int64_t j = 0; j <= t; ++j) {
      for (std::int64_t e = 0; e < D; ++e) s[j] += q[e] * K[j][e] / std::sqrt(double(D));
      mx = std::max(mx, s[j]);
    }
    for (auto& v : s) sum += (v = std::exp(v - mx));
    for (std::int64_t j = 0; j <= t; ++j)
      for (std::int64_t e = 0; e < D; ++e) ref[e] += s[j] / sum * V[j][e];
    EXPECT_TRUE(close(got, ref, 1e-4, 1e-4));
  }
}

TEST(Recording, RefusesWhatCannotReplay) {
  Device& dev = device();
  Tensor x = full(dev, {100}, 2.0), y;
  // A read-back inside the capture.
  EXPECT_THROW(Recording::capture(dev, [&] { (void)(x * 2.0).to_vector(); }), CaptureError);
  EXPECT_THROW(Recording::capture(dev, [&] { (void)sum(x).item(); }), CaptureError);
  EXPECT_THROW(Recording::capture(dev, [&] { auto r = (x + 1.0).to_host_async(); }), CaptureError);
  // A capture inside a capture, a replay inside a capture.
  Recording inner = Recording::capture(dev, [&] { y = x + 1.0; });
  EXPECT_THROW(Recording::capture(dev, [&] { Recording::capture(dev, [&] { y = x + 1.0; }); }), CaptureError);
  EXPECT_THROW(Recording::capture(dev, [&] { inner.replay(); }), CaptureError);
  // A host upload into a buffer that a captured dispatch used.
  EXPECT_THROW(Recording::capture(dev,
                                  [&] {
                                    Tensor z = x * 3.0;
                                    const std::vector<float> h(100, 1.0f);
                                    z.impl()->storage->upload(h.data(), 400);
                                  }),
               CaptureError);
  // A tensor made inside, untouched by the capture's dispatches and alive after it, in a buffer
  // that a dead intermediate of the capture used: the replays would overwrite it.
  Tensor escaped;
  EXPECT_THROW(Recording::capture(dev,
                                  [&] {
                                    { Tensor t = x * 5.0; }
                                    escaped = Tensor::empty(dev, {100});
                                  }),
               CaptureError);
  // The work's own errors pass through; the device stays usable and can capture again.
  EXPECT_THROW(Recording::capture(dev, [&] { y = x + full(dev, {3}, 1.0); }), ShapeError);
  Tensor z;
  Recording ok = Recording::capture(dev, [&] { z = x * 4.0; });
  ok.replay();
  EXPECT_EQ(z.to_vector(), std::vector<float>(100, 8.0f));
  inner.replay();
  EXPECT_EQ(y.to_vector(), std::vector<float>(100, 3.0f));
  Recording empty;
  EXPECT_TRUE(empty.empty());
  empty.replay();
}

namespace {

// The float64 reference of flip/roll/pad: out[i] = in[src(i)] over row-major multi-indices.
template <typename Src>
std::vector<double> gather_ref(const std::vector<float>& in, const Shape& in_shape, const Shape& out_shape, Src src) {
  std::vector<double> r(static_cast<std::size_t>(numel_of(out_shape)));
  std::vector<std::int64_t> idx(out_shape.size(), 0);
  for (std::size_t o = 0; o < r.size(); ++o) {
    std::vector<std::int64_t> s = idx;
    src(s);
    std::int64_t off = 0;
    for (std::size_t d = 0; d < s.size(); ++d) off = off * in_shape[d] + s[d];
    r[o] = in[static_cast<std::size_t>(off)];
    for (std::size_t d = out_shape.size(); d-- > 0;) {
      if (++idx[d] < out_shape[d]) break;
      idx[d] = 0;
    }
  }
  return r;
}

}  // namespace

// flip and roll build no index table on the host (they once uploaded one: a replay then read
// whatever a later allocation of the capture had written into its buffer). Small shapes, so that
// the capture's later intermediates share the index buffers' size class; views as inputs.
TEST(Recording, FlipAndRoll) {
  GLT_RNG(rng);
  const Shape s{3, 4, 5};
  const auto fn = [](const std::vector<Tensor>& x) {
    const Tensor t = x[0].transpose(0, 2);  // [5, 4, 3], a view
    Tensor a = flip(t, {0, -1});
    Tensor b = roll(x[0].narrow(1, 1, 3), -2, 1);  // [3, 3, 5] view, negative shift
    Tensor c = roll(x[0], 7, -1);                  // shift past the size
    Tensor d = flip(roll(x[0], 1, 0), {1});
    return concat({a.reshape({-1}) * 2.0, b.reshape({-1}) + 1.0, c.reshape({-1}), d.reshape({-1}) - 1.0}, 0);
  };
  const auto ref = [&](const std::vector<std::vector<float>>& h) {
    const auto& x = h[0];
    auto a = gather_ref(x, s, {5, 4, 3}, [](std::vector<std::int64_t>& i) {  // t[i] = x[i2, i1, i0]
      const std::int64_t t0 = 4 - i[0], t2 = 2 - i[2];
      i = {t2, i[1], t0};
    });
    auto b = gather_ref(x, s, {3, 3, 5}, [](std::vector<std::int64_t>& i) { i[1] = (i[1] + 2) % 3 + 1; });
    auto c = gather_ref(x, s, s, [](std::vector<std::int64_t>& i) { i[2] = ((i[2] - 7) % 5 + 5) % 5; });
    auto d = gather_ref(x, s, s, [](std::vector<std::int64_t>& i) {
      i[1] = 3 - i[1];
      i[0] = (i[0] + 2) % 3;
    });
    std::vector<double> r;
    for (double v : a) r.push_back(v * 2.0);
    for (double v : b) r.push_back(v + 1.0);
    r.insert(r.end(), c.begin(), c.end());
    for (double v : d) r.push_back(v - 1.0);
    return r;
  };
  check_replays(rng, {s}, fn, ref, 1e-6);
  // Edge shapes: a dim of 1, a shift of 0 and of a multiple of the size, an empty dim.
  const Tensor one = Tensor::from_host(device(), std::vector<float>{1, 2, 3}, {3, 1});
  EXPECT_EQ(flip(one, {1}).to_vector(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(roll(one, 3, 0).to_vector(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(roll(one, -4, 0).to_vector(), (std::vector<float>{2, 3, 1}));
  EXPECT_EQ(flip(Tensor::empty(device(), {0, 2}), {0}).numel(), 0);
  EXPECT_EQ(roll(Tensor::empty(device(), {2, 0}), 1, 1).numel(), 0);
}

// An op's host-built table uploaded inside a capture (pad's reflect/replicate index, a from_host
// tensor) stays in its buffer for the replays: the buffer is not reused by later allocations.
TEST(Recording, HostUploadsKeepTheirBuffers) {
  GLT_RNG(rng);
  const Shape s{2, 3, 4};
  const auto fn = [](const std::vector<Tensor>& x) {
    Tensor a = pad(x[0], {2, 1}, PadMode::reflect);          // [2, 3, 7]
    Tensor b = pad(x[0], {1, 3, 0, 2}, PadMode::replicate);  // [2, 5, 8]
    Tensor k = Tensor::from_host(device(), std::vector<float>{0.5f, -1.0f, 2.0f, 3.0f}, {4});
    Tensor c = x[0] * k;  // k dies here; its buffer must not serve the allocations below
    return concat({(a * 3.0).reshape({-1}), (b - 2.0).reshape({-1}), (c + 1.0).reshape({-1})}, 0);
  };
  const auto ref = [&](const std::vector<std::vector<float>>& h) {
    const auto& x = h[0];
    auto a = gather_ref(x, s, {2, 3, 7}, [](std::vector<std::int64_t>& i) {
      const std::int64_t j = i[2] - 2;
      i[2] = j < 0 ? -j : (j >= 4 ? 6 - j : j);
    });
    auto b = gather_ref(x, s, {2, 5, 8}, [](std::vector<std::int64_t>& i) {
      i[2] = std::clamp<std::int64_t>(i[2] - 1, 0, 3);
      i[1] = std::min<std::int64_t>(i[1], 2);
    });
    const double k[4] = {0.5, -1.0, 2.0, 3.0};
    std::vector<double> r;
    for (double v : a) r.push_back(v * 3.0);
    for (double v : b) r.push_back(v - 2.0);
    for (std::size_t i = 0; i < x.size(); ++i) r.push_back(x[i] * k[i % 4] + 1.0);
    return r;
  };
  check_replays(rng, {s}, fn, ref, 1e-6);
}

// Repeated host uploads into one storage during a capture keep it once (Capture::host_write held
// a reference per upload: 5 uploads, 5 entries). The replays read the last upload's contents.
// Sabotage: the deduplication removed (5 entries).
TEST(Recording, RepeatedUploadsKeptOnce) {
  GLT_RNG(rng);
  Tensor y;
  std::vector<float> last;
  Recording rec = Recording::capture(device(), [&] {
    Tensor t = Tensor::from_host(device(), uniform(rng, 8), {8});  // upload 1 (a new storage)
    for (int i = 0; i < 4; ++i) {                                  // uploads 2 to 5, the same storage
      last = uniform(rng, 8);
      t.impl()->storage->upload(last.data(), last.size() * sizeof(float));
    }
    y = t * 2.0;  // t dies after the capture; the recording keeps its buffer
  });
  const detail::Capture* c = detail::RecordingAccess::capture(rec);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->uploads(), 1u);
  for (int r = 0; r < 2; ++r) {
    rec.replay();
    const auto got = y.to_vector();
    for (std::size_t i = 0; i < last.size(); ++i) EXPECT_EQ(got[i], 2.0f * last[i]) << i;
  }
}

// backward()'s implicit seed of a scalar f32 loss is an upload, not a fill dispatch: the replays
// read the kept buffer. A leaf whose gradient would be the seed itself (add's backward passes gy
// on) gets a copy, recorded: changed in place between replays, the next replay writes it again.
// Fresh x each replay, checked exactly (w's gradient is x, s's is 1). Sabotage: the copy dropped
// (s's gradient stays 5 after the in-place change).
TEST(Recording, BackwardsImplicitSeed) {
  GLT_RNG(rng);
  Device& dev = device();
  Tensor x = upload(uniform(rng, 37), {37});
  Tensor w = upload(uniform(rng, 37), {37});
  Tensor s = upload({0.5f}, {1});
  requires_grad_(w), requires_grad_(s);
  auto step = [&] {
    zero_grad(w), zero_grad(s);
    backward(add(sum(mul(x, w)).reshape({1}), s));
  };
  step();
  const auto d0 = dev.dispatch_count();
  step();
  const auto eager = dev.dispatch_count() - d0;
  Recording rec = Recording::capture(dev, step);
  EXPECT_EQ(rec.dispatches(), eager);
  for (int r = 0; r < 3; ++r) {
    SCOPED_TRACE("replay " + std::to_string(r));
    const std::vector<float> h = uniform(rng, 37);
    x.copy_(upload(h, {37}));
    rec.replay();
    EXPECT_EQ(grad(w).to_vector(), h);
    EXPECT_EQ(grad(s).to_vector(), std::vector<float>{1.0f});
    Tensor gs = grad(s);
    mul_(gs, 5.0);  // the caller's in-place change of a gradient between replays
    EXPECT_EQ(grad(s).to_vector(), std::vector<float>{5.0f});
  }
  // A leaf root's gradient is its own tensor too.
  Tensor l = upload({2.0f}, {});
  requires_grad_(l);
  backward(l);
  EXPECT_EQ(grad(l).to_vector(), std::vector<float>{1.0f});
}
