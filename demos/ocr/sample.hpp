// The OCR demo's own sample image: lines of text in several sizes rendered with stb_truetype
// (DejaVu Sans), one of them rotated, on a light background.
#pragma once
#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "image.hpp"

namespace ocr {

struct SampleLine {
  std::string text;
  float px;       ///< glyph height in pixels
  double angle;   ///< degrees, counter-clockwise
  cv::Point org;  ///< left end of the baseline
};

/// The lines of the default sample.
std::vector<SampleLine> default_sample_lines();
/// Renders lines onto a width x height canvas (RGB).
cv::Mat render_sample(const Font& font, const std::vector<SampleLine>& lines, int width, int height);

}  // namespace ocr
