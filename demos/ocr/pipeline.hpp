// PaddleOCR's PP-OCR pipeline on gltensor::Model: text detection (DBNet; its pre- and
// post-processing in demos/ocr_det, shared with the graphics demo), optional text
// angle classification, text recognition (SVTR-LCNet with CTC; greedy decoding). Pre- and
// post-processing follow PaddleOCR's (DetResizeForTest, NormalizeImage, DBPostProcess,
// get_rotate_crop_image, ClsResizeImg, RecResizeImg, CTCLabelDecode) with OpenCV's imgproc and
// the Clipper library for the geometry.
#pragma once
#include <array>
#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "det.hpp"
#include "gltensor/gltensor.hpp"
#include "image.hpp"

namespace ocr {

struct OcrOptions {
  std::string det_model, rec_model, cls_model, keys;  ///< cls_model may be empty
  int det_limit = 960;         ///< longer image side is scaled down to at most this (multiple of 32)
  float det_threshold = 0.3f;  ///< probability -> bitmap
  float box_threshold = 0.6f;  ///< minimum mean probability inside a box
  float unclip_ratio = 1.5f;   ///< box growth: area * ratio / perimeter
  int rec_height = 48;
  int rec_min_width = 320;
  bool use_cls = false;
  float cls_threshold = 0.9f;
  bool f16_weights = false;
};

struct TextLine {
  std::array<cv::Point2f, 4> box;  ///< top-left, top-right, bottom-right, bottom-left (image pixels)
  std::string text;
  float confidence = 0;     ///< mean probability of the decoded characters
  float box_score = 0;      ///< mean detection probability inside the box
  bool rotated180 = false;  ///< the angle classifier turned the crop
};

struct OcrTimings {
  double det_ms = 0, cls_ms = 0, rec_ms = 0, post_ms = 0, total_ms = 0;
};

class OcrPipeline {
 public:
  OcrPipeline(const gltensor::Device& dev, const OcrOptions& options);
  /// Reads every text line of an RGB image, top to bottom.
  std::vector<TextLine> run(const cv::Mat& rgb, OcrTimings* timings = nullptr);

  /// The steps, for tests: the detector's input [1, 3, H, W] (BGR, ImageNet-normalized, sides
  /// multiples of 32) and the scale from it back to the image; its probability map -> boxes;
  /// a crop's recognizer input [1, 3, 48, W]; CTC greedy decoding of [N, T, C] probabilities.
  std::vector<float> det_input(const cv::Mat& rgb, int& h, int& w) const;
  std::vector<TextLine> boxes_from_map(const std::vector<float>& prob, int h, int w, int img_h, int img_w) const;
  std::vector<float> rec_input(const cv::Mat& crop, int width) const;
  std::vector<std::pair<std::string, float>> ctc_decode(const std::vector<float>& probs, std::int64_t n, std::int64_t t,
                                                        std::int64_t c) const;
  /// The inputs of the last run's detector and recognizer calls (for benchmarks that feed the
  /// same values to another runtime).
  const std::vector<float>& last_det_input(gltensor::Shape& shape) const {
    shape = last_det_shape_;
    return last_det_;
  }
  const std::vector<float>& last_rec_input(gltensor::Shape& shape) const {
    shape = last_rec_shape_;
    return last_rec_;
  }
  gltensor::Model& det() { return det_; }
  gltensor::Model& rec() { return rec_; }
  /// The crop of a box, upright (perspective transform; tall crops turned by 90 degrees).
  static cv::Mat crop(const cv::Mat& rgb, const std::array<cv::Point2f, 4>& box);

 private:
  gltensor::Device dev_;
  OcrOptions opt_;
  gltensor::Model det_, rec_;
  std::vector<gltensor::Model> cls_;  // zero or one
  std::vector<std::string> chars_;    // index 0: CTC blank
  std::vector<float> last_det_, last_rec_;
  gltensor::Shape last_det_shape_, last_rec_shape_;
};

/// The annotated picture: the image with the boxes (left) and the recognized text drawn at the
/// boxes' places (right).
cv::Mat annotate(const cv::Mat& rgb, const std::vector<TextLine>& lines, const Font& font);

/// s without spaces (ASCII and the ideographic U+3000 the recognizer emits at line ends), for
/// comparing text read back with the text rendered (the recognizer drops most spaces).
std::string without_spaces(const std::string& s);

/// Levenshtein distance between UTF-8 strings, by code point.
std::size_t edit_distance(const std::string& a, const std::string& b);

}  // namespace ocr
