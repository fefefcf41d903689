// The graphics demo's tensor pipeline: its filters and a float64 CPU reference (used by the
// screenshot check, graphics_demo_check). With x the rendered frame as [1, 3, H, W] in [0, 1]:
//   b = conv2d(x, Gaussian 3x3 [1 2 1; 2 4 2; 1 2 1] / 16, groups 3, padding 1)   (blur)
//   e = conv2d(b, Laplacian 3x3 [0 1 0; 1 -4 1; 0 1 0], groups 3, padding 1)       (edges)
//   y = clamp(0.6 b + 3 |e|, 0, 1)                                                   (glowing edges)
// Zero padding at the borders (conv2d's).
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

namespace graphics_demo {

inline constexpr std::array<float, 9> kGauss = {1 / 16.f, 2 / 16.f, 1 / 16.f, 2 / 16.f, 4 / 16.f,
                                                2 / 16.f, 1 / 16.f, 2 / 16.f, 1 / 16.f};
inline constexpr std::array<float, 9> kLaplace = {0, 1, 0, 1, -4, 1, 0, 1, 0};
inline constexpr float kBlurWeight = 0.6f, kEdgeWeight = 3.0f;

/// The overlay (frame rate, GPU time) covers rows [0, kOverlayRows) at the top of the window.
inline constexpr int kOverlayRows = 14;

/// 3x3 zero-padded convolution of one plane (rows top first).
inline std::vector<double> conv3x3(const std::vector<double>& p, int w, int h, const std::array<float, 9>& k) {
  std::vector<double> out(p.size());
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      double s = 0;
      for (int ky = 0; ky < 3; ++ky)
        for (int kx = 0; kx < 3; ++kx) {
          const int yy = y + ky - 1, xx = x + kx - 1;
          if (yy >= 0 && yy < h && xx >= 0 && xx < w)
            s += p[static_cast<std::size_t>(yy * w + xx)] * k[static_cast<std::size_t>(ky * 3 + kx)];
        }
      out[static_cast<std::size_t>(y * w + x)] = s;
    }
  return out;
}

/// The pipeline on an RGBA8 picture (rows top first) -> RGB values in [0, 1] per channel plane.
inline std::array<std::vector<double>, 3> reference(const std::uint8_t* rgba, int w, int h) {
  std::array<std::vector<double>, 3> out;
  for (int c = 0; c < 3; ++c) {
    std::vector<double> p(static_cast<std::size_t>(w * h));
    for (std::size_t i = 0; i < p.size(); ++i) p[i] = rgba[i * 4 + static_cast<std::size_t>(c)] / 255.0;
    const auto b = conv3x3(p, w, h, kGauss);
    const auto e = conv3x3(b, w, h, kLaplace);
    out[static_cast<std::size_t>(c)].resize(p.size());
    for (std::size_t i = 0; i < p.size(); ++i)
      out[static_cast<std::size_t>(c)][i] = std::clamp(kBlurWeight * b[i] + kEdgeWeight * std::fabs(e[i]), 0.0, 1.0);
  }
  return out;
}

}  // namespace graphics_demo
