#include "plot.hpp"

#include <stb/stb_easy_font.h>
#include <stb/stb_image_write.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace demo {

Canvas::Canvas(int w, int h, RGB bg) : w_(w), h_(h), px_(static_cast<std::size_t>(w) * h * 3) {
  for (std::size_t i = 0; i < px_.size(); i += 3) std::copy(bg.begin(), bg.end(), px_.begin() + i);
}

void Canvas::rect(int x0, int y0, int x1, int y1, RGB c) {
  x0 = std::max(x0, 0), y0 = std::max(y0, 0), x1 = std::min(x1, w_), y1 = std::min(y1, h_);
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x)
      std::copy(c.begin(), c.end(), px_.begin() + (static_cast<std::size_t>(y) * w_ + x) * 3);
}

void Canvas::line(double x0, double y0, double x1, double y1, RGB c, int t) {
  const int steps = static_cast<int>(std::max(std::fabs(x1 - x0), std::fabs(y1 - y0))) + 1;
  for (int i = 0; i <= steps; ++i) {
    const double f = static_cast<double>(i) / steps;
    const int x = static_cast<int>(std::lround(x0 + f * (x1 - x0))),
              y = static_cast<int>(std::lround(y0 + f * (y1 - y0)));
    rect(x - t / 2, y - t / 2, x - t / 2 + t, y - t / 2 + t, c);
  }
}

void Canvas::text(int x, int y, const std::string& s, RGB c, int scale) {
  static char buf[60000];
  const int quads = stb_easy_font_print(0, 0, const_cast<char*>(s.c_str()), nullptr, buf, sizeof buf);
  const float* v = reinterpret_cast<const float*>(buf);
  for (int q = 0; q < quads; ++q) {
    const float* p = v + q * 16;  // 4 vertices of (x, y, z, color)
    const int qx0 = static_cast<int>(p[0]), qy0 = static_cast<int>(p[1]), qx1 = static_cast<int>(p[8]),
              qy1 = static_cast<int>(p[9]);
    rect(x + qx0 * scale, y + qy0 * scale, x + qx1 * scale, y + qy1 * scale, c);
  }
}

void Canvas::save_png(const std::string& path) const {
  if (!stbi_write_png(path.c_str(), w_, h_, 3, px_.data(), w_ * 3)) throw std::runtime_error("cannot write " + path);
}

namespace {
std::string fmt(double v) {
  char b[32];
  std::snprintf(b, sizeof b, std::fabs(v) >= 100 ? "%.0f" : std::fabs(v) >= 1 ? "%.2f" : "%.3f", v);
  return b;
}
}  // namespace

void chart(Canvas& c, int x, int y, int w, int h, const std::string& title, const std::vector<Series>& series,
           const std::string& xlabel) {
  const RGB axis{40, 40, 40}, grid{225, 225, 225};
  double xmin = 1e300, xmax = -1e300, ymin = 1e300, ymax = -1e300;
  for (const auto& s : series)
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      xmin = std::min(xmin, s.x[i]), xmax = std::max(xmax, s.x[i]);
      ymin = std::min(ymin, s.y[i]), ymax = std::max(ymax, s.y[i]);
    }
  if (xmin > xmax) xmin = 0, xmax = 1, ymin = 0, ymax = 1;
  if (xmax == xmin) xmax = xmin + 1;
  if (ymax - ymin < 1e-9 * std::max(1.0, std::fabs(ymax))) ymin -= 1, ymax += 1;
  const double pad = (ymax - ymin) * 0.08 + 1e-9;
  ymin -= pad, ymax += pad;
  const int L = x + 60, R = x + w - 15, T = y + 30, B = y + h - 40;
  c.text(x + 60, y + 8, title, axis, 2);
  for (int i = 0; i <= 4; ++i) {
    const int gy = B - (B - T) * i / 4;
    c.line(L, gy, R, gy, grid);
    c.text(x + 5, gy - 4, fmt(ymin + (ymax - ymin) * i / 4), axis);
    const int gx = L + (R - L) * i / 4;
    c.text(gx - 8, B + 8, fmt(xmin + (xmax - xmin) * i / 4), axis);
  }
  c.line(L, T, L, B, axis, 2);
  c.line(L, B, R, B, axis, 2);
  c.text((L + R) / 2 - 20, B + 24, xlabel, axis);
  int ly = T + 6;
  for (const auto& s : series) {
    for (std::size_t i = 1; i < s.x.size(); ++i) {
      auto px = [&](double v) { return L + (v - xmin) / (xmax - xmin) * (R - L); };
      auto py = [&](double v) { return B - (v - ymin) / (ymax - ymin) * (B - T); };
      c.line(px(s.x[i - 1]), py(s.y[i - 1]), px(s.x[i]), py(s.y[i]), s.color, 2);
    }
    if (s.x.size() == 1) c.rect(L - 2, ly, L + 2, ly + 4, s.color);
    c.rect(R - 150, ly, R - 135, ly + 8, s.color);
    c.text(R - 130, ly, s.label, axis);
    ly += 14;
  }
}

void confusion(Canvas& c, int x, int y, int cell, const std::vector<std::vector<long>>& m,
               const std::vector<std::string>& names) {
  long mx = 1;
  for (const auto& r : m)
    for (long v : r) mx = std::max(mx, v);
  const RGB axis{40, 40, 40};
  c.text(x, y, "confusion matrix (rows: true class, columns: predicted)", axis, 2);
  const int top = y + 30, left = x + 90;
  for (std::size_t i = 0; i < m.size(); ++i) {
    c.text(x, top + static_cast<int>(i) * cell + cell / 2 - 4, names[i], axis);
    c.text(left + static_cast<int>(i) * cell + 2, top + static_cast<int>(m.size()) * cell + 6, names[i].substr(0, 6),
           axis);
    for (std::size_t j = 0; j < m[i].size(); ++j) {
      const double f = std::sqrt(static_cast<double>(m[i][j]) / mx);
      const RGB col{static_cast<unsigned char>(255 - 200 * f), static_cast<unsigned char>(255 - 150 * f), 255};
      const int cx = left + static_cast<int>(j) * cell, cy = top + static_cast<int>(i) * cell;
      c.rect(cx, cy, cx + cell - 1, cy + cell - 1, col);
      c.text(cx + 4, cy + cell / 2 - 4, std::to_string(m[i][j]), f > 0.6 ? RGB{255, 255, 255} : axis);
    }
  }
}

}  // namespace demo
