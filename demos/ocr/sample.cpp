#include "sample.hpp"

#include <opencv2/imgproc.hpp>

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
