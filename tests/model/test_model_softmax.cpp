// The model runtime's Softmax, LogSoftmax and Hardmax (src/model/ops_nn.cpp, softmax_like) against
// a float64 reference: before opset 13 the input coerced to 2-D at the axis ([d0 .. d(axis-1)]
// rows of [d(axis) ..] columns), from opset 13 along the one axis; negative axes, the default
// axis of each opset, and 0-element inputs (0 rows, 0 columns: an empty output of the input's
// shape, as ONNX Runtime gives); a model's Softmax output written into host-visible memory up to
// Settings::host_output_bytes (Args::host_output), plain and replayed.
#include <cmath>

#include "onnx_builder.hpp"
#include "runtime/settings.hpp"
#include "tensor/tensor_impl.hpp"
#include "test_util.hpp"

using namespace gltensor;
using namespace glt_test;
using B = OnnxBuilder;

namespace {

struct Case {
  const char* op;
  int opset;
  Shape shape;
  std::int64_t axis;  ///< -99: no attribute (the opset's default)
};

std::int64_t count(const Shape& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

// The float64 reference over x viewed as [outer, len, inner], normalized along len (before opset
// 13: inner = 1, len the coerced columns); Hardmax one-hot at the first maximum.
std::vector<double> reference(const std::string& op, const std::vector<float>& x, std::int64_t outer, std::int64_t len,
                              std::int64_t inner) {
  std::vector<double> y(x.size());
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      auto at = [&](std::int64_t j) { return static_cast<std::size_t>((o * len + j) * inner + i); };
      double mx = -INFINITY, sum = 0;
      std::int64_t arg = 0;
      for (std::int64_t j = 0; j < len; ++j)
        if (x[at(j)] > mx) mx = x[at(j)], arg = j;
      for (std::int64_t j = 0; j < len; ++j) sum += std::exp(x[at(j)] - mx);
      for (std::int64_t j = 0; j < len; ++j) {
        const double e = x[at(j)] - mx;
        y[at(j)] = op == "Softmax"      ? std::exp(e) / sum
                   : op == "LogSoftmax" ? e - std::log(sum)
                                        : (j == arg ? 1.0 : 0.0);
      }
    }
  return y;
}

void check(const Case& c, std::mt19937_64& rng) {
  SCOPED_TRACE(std::string(c.op) + " opset " + std::to_string(c.opset) + " shape " + to_string(c.shape) + " axis " +
               std::to_string(c.axis));
  B b(c.opset);
  b.input("x", c.shape);
  auto& n = b.node(c.op, {"x"}, {"y"});
  if (c.axis != -99) B::attr_i(n, "axis", c.axis);
  b.output_any("y");
  const std::string path = b.save(std::string("softmax_") + c.op + std::to_string(c.opset));
  const auto x = uniform(rng, static_cast<std::size_t>(count(c.shape)), -3, 3);
  Model model = Model::load(device(), path);
  Tensor y;
  ASSERT_NO_THROW(y = model.run({{"x", Tensor::from_host(device(), x, c.shape)}}).at("y"));
  EXPECT_EQ(y.shape(), c.shape);
  const auto rank = static_cast<std::int64_t>(c.shape.size());
  std::int64_t axis = c.axis != -99 ? c.axis : c.opset >= 13 ? -1 : 1;
  if (axis < 0) axis += rank;
  std::int64_t outer = 1, len = 1, inner = 1;
  for (std::int64_t d = 0; d < rank; ++d) {
    const std::int64_t s = c.shape[static_cast<std::size_t>(d)];
    if (d < axis)
      outer *= s;
    else if (d == axis || c.opset < 13)
      len *= s;
    else
      inner *= s;
  }
  EXPECT_TRUE(close(y.to_vector(), reference(c.op, x, outer, len, inner), 1e-5, 1e-6));
}

}  // namespace

TEST(ModelSoftmax, CoercedTo2DBeforeOpset13AndAlongTheAxisFrom13) {
  GLT_RNG(rng);
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"})
    for (int opset : {9, 11, 13}) {
      check({op, opset, {2, 3, 5}, 1}, rng);
      check({op, opset, {2, 3, 5}, -99}, rng);
      check({op, opset, {2, 3, 5}, 0}, rng);
      check({op, opset, {2, 3, 5}, -1}, rng);
      check({op, opset, {4, 37}, 1}, rng);
      check({op, opset, {1, 1}, 1}, rng);
    }
}

TEST(ModelSoftmax, ZeroElementInputsGiveEmptyOutputs) {
  GLT_RNG(rng);
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"})
    for (int opset : {9, 11, 13}) {
      check({op, opset, {0, 5}, 1}, rng);     // 0 rows
      check({op, opset, {4, 0}, 1}, rng);     // 0 columns
      check({op, opset, {3, 0, 2}, 1}, rng);  // 0 columns, coerced (the axis's dim is 0)
      check({op, opset, {3, 2, 0}, 1}, rng);  // 0 columns behind the axis
      check({op, opset, {0, 3, 4}, 2}, rng);  // 0 rows before the axis
      check({op, opset, {2, 0, 4}, 2}, rng);  // 0 rows, the zero inside them
      check({op, opset, {0, 4}, -99}, rng);
    }
}

// A model's Softmax / LogSoftmax output (softmax_out's host_out): in a host-visible buffer where it
// is at most Settings::host_output_bytes (as set: 256 KiB by default; and 1 MiB) and the device has
// such buffers (direct host I/O on), else device memory; plain runs and replays (outputs_to_host), opset 13 and 11 (the
// coerced 2-D view's reshape), [8, 168, 168] (903 KB: attention scores, torchcmp's case), a small one and one past the
// limit; fresh inputs each run with NaN / Inf in the first row, checked against the float64 reference, and a plain
// run's outputs kept and checked again after the later runs. Sabotage: host_out false in softmax_like (fails: not
// host-visible).
TEST(ModelSoftmax, ModelOutputsInHostMemoryUpToTheLimit) {
  GLT_RNG(rng);
  Device& dev = device();
  const bool direct = detail::alloc_host(*dev.impl(), {1}, DType::f32, "test").defined();
  for (const std::size_t limit : {detail::settings().host_output_bytes, std::size_t{1} << 20})
    for (const char* op : {"Softmax", "LogSoftmax"})
      for (int opset : {13, 11})
        for (const Shape& shape : {Shape{8, 168, 168}, Shape{3, 37}, Shape{1100, 240}})
          for (bool replay : {false, true}) {
            ScopedSettings s;
            s->host_output_bytes = limit;
            SCOPED_TRACE(std::string(op) + " opset " + std::to_string(opset) + " " + to_string(shape) +
                         (replay ? " replayed" : " plain") + ", limit " + std::to_string(limit));
            B b(opset);
            b.input("x", shape);
            B::attr_i(b.node(op, {"x"}, {"y"}), "axis", opset >= 13 ? -1 : static_cast<std::int64_t>(shape.size()) - 1);
            b.output_any("y");
            ModelOptions o;
            o.replay = replay;
            Model model = Model::load(dev, b.save(std::string("softmax_host_") + op), o);
            const std::int64_t n = count(shape), len = shape.back();
            const bool host = direct && static_cast<std::size_t>(n) * 4 <= limit;
            std::vector<Tensor> kept;
            std::vector<std::vector<double>> want;
            for (int run = 0; run < 4; ++run) {  // replayed: run 0 plain, 1 captured, 2 and 3 replays
              auto x = uniform(rng, static_cast<std::size_t>(n), -3, 3);
              sprinkle_specials(x);
              const Tensor y = model.run({{"x", Tensor::from_host(dev, x, shape)}}).at("y");
              want.push_back(reference(op, x, n / len, len, 1));
              EXPECT_TRUE(close(y.to_vector(), want.back(), 1e-5, 1e-6)) << "run " << run;
              EXPECT_EQ(y.impl()->storage->block.host != nullptr, host) << "run " << run;
              kept.push_back(y);
            }
            // (a replay returns the recording's outputs, which the next replay overwrites: plain only)
            for (std::size_t i = 0; !replay && i < kept.size(); ++i)
              EXPECT_TRUE(close(kept[i].to_vector(), want[i], 1e-5, 1e-6)) << "kept output of run " << i;
          }
}
