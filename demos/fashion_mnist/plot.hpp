// A small RGB canvas for the training report: line charts, a heat-map grid and text
// (stb_easy_font), written as PNG (stb_image_write).
#pragma once
#include <array>
#include <string>
#include <vector>

namespace demo {

using RGB = std::array<unsigned char, 3>;

class Canvas {
 public:
  Canvas(int w, int h, RGB bg = {255, 255, 255});
  void rect(int x0, int y0, int x1, int y1, RGB c);
  void line(double x0, double y0, double x1, double y1, RGB c, int thickness = 1);
  /// Text with its top-left corner at (x, y); scale 1 = 7-pixel-high glyphs.
  void text(int x, int y, const std::string& s, RGB c, int scale = 1);
  void save_png(const std::string& path) const;
  int width() const { return w_; }
  int height() const { return h_; }

 private:
  int w_, h_;
  std::vector<unsigned char> px_;
};

struct Series {
  std::string label;
  std::vector<double> x, y;
  RGB color;
};

/// Draws a chart with axes, ticks and a legend into the rectangle (x, y, w, h).
void chart(Canvas& c, int x, int y, int w, int h, const std::string& title, const std::vector<Series>& series,
           const std::string& xlabel);
/// Draws a 10x10 confusion matrix (rows = true class, columns = predicted) with counts.
void confusion(Canvas& c, int x, int y, int cell, const std::vector<std::vector<long>>& m,
               const std::vector<std::string>& names);

}  // namespace demo
