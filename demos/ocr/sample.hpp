// The OCR demo's own sample image: lines of text in several sizes rendered with stb_truetype
// (DejaVu Sans), one of them rotated, on a light background.
#pragma once
#include <cstddef>
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

/// The lines of the default sample (for an 800 x 480 canvas).
std::vector<SampleLine> default_sample_lines();
/// A page of many lines for a width x height canvas (the OCR bench's 960 x 960 page): rows of
/// prose in sizes from 18 to 36 px down the left margin, each cut at a word to fit the width,
/// and on every third row a short item (a date, an amount, a page number) at the right margin,
/// so that the lines' aspect ratios spread from about 1 to 40. Deterministic.
std::vector<SampleLine> page_sample_lines(const Font& font, int width, int height);
/// Renders lines onto a width x height canvas (RGB).
cv::Mat render_sample(const Font& font, const std::vector<SampleLine>& lines, int width, int height);

struct TextAccuracy {
  std::size_t edits = 0, characters = 0;  ///< summed over the rendered lines
  double accuracy() const { return characters ? 1.0 - static_cast<double>(edits) / characters : 1.0; }
};
/// Character accuracy of text read back: each rendered line against the read line closest to it
/// (edit distance by code point, spaces ignored: the recognizer drops most of them).
TextAccuracy text_accuracy(const std::vector<SampleLine>& truth, const std::vector<std::string>& read);

}  // namespace ocr
