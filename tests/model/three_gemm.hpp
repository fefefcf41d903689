// The three-Gemm model of the model tests (issue 21's small model): three layers of width W,
// MatMul + Add with ReLU after the first two, on a [1, rows, W] input whose row count is dynamic;
// random weights and a float64 reference; load_model, the model tests' loader.
#pragma once
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "gltensor/model.hpp"
#include "onnx_builder.hpp"
#include "test_util.hpp"

namespace glt_test {

struct ThreeGemm {
  static constexpr std::int64_t W = 96;
  std::vector<std::vector<float>> w, b;
  std::string path;
  explicit ThreeGemm(std::mt19937_64& rng, const std::string& name = "replay_three_gemm") {
    OnnxBuilder m(13);
    m.input("x", {1, -1, W}).output("y", {1, -1, W});
    std::string in = "x";
    for (int l = 0; l < 3; ++l) {
      const std::string s = std::to_string(l);
      w.push_back(uniform(rng, W * W, -0.2f, 0.2f));
      b.push_back(uniform(rng, W));
      m.init("w" + s, {W, W}, w.back()).init("b" + s, {W}, b.back());
      m.node("MatMul", {in, "w" + s}, {"m" + s});
      m.node("Add", {"m" + s, "b" + s}, {l == 2 ? "y" : "p" + s});
      if (l < 2) m.node("Relu", {"p" + s}, {"a" + s});
      in = "a" + s;
    }
    path = m.save(name);
  }
  std::vector<double> ref(const std::vector<float>& x, std::int64_t rows) const {
    std::vector<double> a(x.begin(), x.end());
    for (int l = 0; l < 3; ++l) {
      std::vector<double> o(rows * W);
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t j = 0; j < W; ++j) {
          double s = b[l][j];
          for (std::int64_t k = 0; k < W; ++k) s += a[r * W + k] * w[l][k * W + j];
          o[r * W + j] = l < 2 ? std::max(s, 0.0) : s;
        }
      a = std::move(o);
    }
    return a;
  }
};

/// The model at `path` on the tests' device, with ModelOptions::replay (and replay_shapes) as given.
inline gltensor::Model load_model(const std::string& path, bool replay, int replay_shapes = 1) {
  gltensor::ModelOptions o;
  o.replay = replay;
  o.replay_shapes = replay_shapes;
  return gltensor::Model::load(device(), path, o);
}

}  // namespace glt_test
