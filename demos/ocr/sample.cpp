#include "sample.hpp"

#include <algorithm>
#include <opencv2/imgproc.hpp>

#include "pipeline.hpp"

namespace ocr {

std::vector<SampleLine> default_sample_lines() {
  return {
      {"gltensor OCR demo", 44, 0, {40, 70}},
      {"The quick brown fox jumps over the lazy dog.", 30, 0, {40, 135}},
      {"Invoice 2026-11-24: total 1234.56 EUR", 24, 0, {40, 190}},
      {"PP-OCRv4 runs on GLSL compute shaders", 34, 0, {40, 255}},
      {"This line is rotated by eight degrees", 28, 8, {60, 380}},
      {"small print: 0123456789 (c) gltensor", 18, 0, {40, 440}},
  };
}

std::vector<SampleLine> page_sample_lines(const Font& font, int width, int height) {
  static const char* const prose[] = {
      "Quarterly report of the gltensor project",
      "Every tensor op runs as a GLSL compute shader over storage buffers.",
      "Shipping address: 42 Harbour Road, Springfield",
      "The same code runs on llvmpipe and on NVIDIA GPUs",
      "Invoice 2026-11-26 total 1234.56 EUR due in 30 days",
      "Text lines are sorted by width and read in batches of six.",
      "Detection finds the boxes",
      "Recognition reads each line with CTC decoding",
      "Order number 88412 was shipped on Monday morning",
      "Kernels compile once and are cached on disk",
      "Phone +49 30 1234567",
      "A fast brown fox jumps over the lazy dog again and again",
      "Pack my box with five dozen liquor jugs",
      "Meeting notes from the planning session",
      "Lines of many widths make many batches",
      "Contact: support at example dot org",
      "Version 4.2.1 released under the MIT license",
      "The quick brown fox jumps over the lazy dog.",
      "Total weight 17.5 kg, three parcels",
      "End of page",
  };
  static const char* const items[] = {"p. 12", "2026-11-26", "EUR 980.00", "No. 7781", "OK", "x3", "Page 3 of 9"};
  static const float sizes[] = {36, 22, 28, 18, 26, 20, 32, 24};
  const int margin = 30;
  std::vector<SampleLine> lines;
  float top = margin;
  for (std::size_t row = 0;; ++row) {
    const float px = sizes[row % std::size(sizes)];
    const int baseline = static_cast<int>(top + px);
    if (baseline + px * 0.35f > height - margin) break;
    std::string text = prose[row % std::size(prose)];
    while (font.width(text, px) > width - 2 * margin && text.find(' ') != std::string::npos)
      text.erase(text.rfind(' '));
    lines.push_back({text, px, 0, {margin, baseline}});
    if (row % 3 == 1) {
      const std::string item = items[(row / 3) % std::size(items)];
      const int x = width - margin - font.width(item, px);
      if (x > margin + font.width(text, px) + 3 * px) lines.push_back({item, px, 0, {x, baseline}});
    }
    top += px * 1.8f;
  }
  return lines;
}

TextAccuracy text_accuracy(const std::vector<SampleLine>& truth, const std::vector<std::string>& read) {
  TextAccuracy a;
  for (const auto& t : truth) {
    const std::string want = without_spaces(t.text);
    std::size_t best = want.size();
    for (const auto& r : read) best = std::min(best, edit_distance(without_spaces(r), want));
    a.edits += best;
    a.characters += want.size();
  }
  return a;
}

cv::Mat render_sample(const Font& font, const std::vector<SampleLine>& lines, int width, int height) {
  cv::Mat img(height, width, CV_8UC3, cv::Scalar(250, 250, 246));
  const cv::Scalar ink(20, 24, 32);
  for (const auto& l : lines) {
    if (l.angle == 0) {
      font.draw(img, l.text, l.org.x, l.org.y, l.px, ink);
      continue;
    }
    // Render flat on a transparent layer, rotate it about the baseline's left end, blend.
    cv::Mat layer(height, width, CV_8UC3, cv::Scalar(0, 0, 0));
    font.draw(layer, l.text, l.org.x, l.org.y, l.px, cv::Scalar(255, 255, 255));
    cv::Mat rot =
        cv::getRotationMatrix2D(cv::Point2f(static_cast<float>(l.org.x), static_cast<float>(l.org.y)), l.angle, 1.0);
    cv::Mat turned;
    cv::warpAffine(layer, turned, rot, layer.size(), cv::INTER_LINEAR, cv::BORDER_CONSTANT, cv::Scalar(0, 0, 0));
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x) {
        const float a = turned.at<cv::Vec3b>(y, x)[0] / 255.0f;
        if (a <= 0) continue;
        auto& p = img.at<cv::Vec3b>(y, x);
        for (int k = 0; k < 3; ++k) p[k] = cv::saturate_cast<uchar>(p[k] * (1 - a) + ink[k] * a);
      }
  }
  return img;
}

}  // namespace ocr
