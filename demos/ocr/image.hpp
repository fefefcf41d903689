// Images of the OCR demo: 8-bit RGB cv::Mat (OpenCV imgproc from Debian), PNG/JPG through stb.
#pragma once
#include <memory>
#include <opencv2/core.hpp>
#include <string>

namespace ocr {

/// Reads a PNG/JPG/BMP file as RGB (CV_8UC3); throws std::runtime_error naming the file.
cv::Mat read_image(const std::string& path);
/// Writes an RGB (CV_8UC3) image as PNG; throws std::runtime_error naming the file.
void write_png(const std::string& path, const cv::Mat& rgb);

/// Text drawn with stb_truetype from a TrueType font (DejaVu Sans by default).
class Font {
 public:
  explicit Font(const std::string& path = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf");
  /// Draws UTF-8 text with its baseline at (x, y), `px` pixels high, blending `color` (RGB) over
  /// the image by coverage. Returns the advance width in pixels.
  int draw(cv::Mat& rgb, const std::string& text, int x, int y, float px, cv::Scalar color) const;
  /// Width in pixels of the text at `px`.
  int width(const std::string& text, float px) const;
  const std::string& path() const { return path_; }

 private:
  struct Info;
  std::string path_;
  std::shared_ptr<const std::string> data_;
  std::shared_ptr<Info> info_;  // points into *data_
};

}  // namespace ocr
