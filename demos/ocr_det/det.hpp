// PaddleOCR's text detection steps around the PP-OCR det model (DBNet; Liao et al., "Real-time
// Scene Text Detection with Differentiable Binarization", AAAI 2020), shared by the OCR demo
// (demos/ocr) and the graphics demo (demos/graphics, --network det) and their checks:
//  - preprocessing (DetResizeForTest with limit_type max, NormalizeImage, ToCHWImage): the
//    image resized to sides that are multiples of 32, as BGR planes (x / 255 - mean) / std with
//    PaddleOCR's statistics given in BGR order (kDetMean / kDetStd: index 0 is blue);
//  - DB post-processing (DBPostProcess, box_type quad): the probability map thresholded, its
//    contours' minimum-area boxes scored, grown (unclip, Clipper) and scaled to the image.
// OpenCV's imgproc and the Clipper library do the geometry.
#pragma once
#include <array>
#include <opencv2/core.hpp>
#include <vector>

namespace ocr {

/// NormalizeImage's statistics, per channel of the BGR image the model takes (0: B, 1: G, 2: R).
inline constexpr float kDetMean[3] = {0.485f, 0.456f, 0.406f};
inline constexpr float kDetStd[3] = {0.229f, 0.224f, 0.225f};

/// The planes of an 8-bit RGB image as BGR, (v / 255 - mean[c]) / stdv[c] with c indexing B, G,
/// R, written into out (3 planes of `width` columns: columns past rgb.cols are left as they are).
void to_chw_bgr(const cv::Mat& rgb, const float mean[3], const float stdv[3], std::vector<float>& out, int width);

/// The detector's input size for an img_h x img_w image, PaddleOCR's DetResizeForTest rule
/// (resize_image_type0, limit_type max): ratio = limit / longer side where that side exceeds
/// `limit`, else 1; each side int(side * ratio), then rounded to the nearest multiple of 32 (ties
/// to even, as Python's round) and at least 32. So neither side exceeds `limit` rounded the same
/// way, and an image within the limit is never scaled up beyond the rounding to 32. Throws
/// std::invalid_argument for an empty image or a limit below 1.
void det_size(int img_h, int img_w, int limit, int& h, int& w);

/// The detector's input [1, 3, h, w] for an 8-bit RGB image: resized to det_size(), BGR,
/// normalized.
std::vector<float> det_input(const cv::Mat& rgb, int limit, int& h, int& w);

struct DbOptions {
  float det_threshold = 0.3f;  ///< probability -> bitmap
  float box_threshold = 0.6f;  ///< minimum mean probability inside a box
  float unclip_ratio = 1.5f;   ///< box growth: area * ratio / perimeter
  int max_candidates = 1000;
};

struct DetBox {
  std::array<cv::Point2f, 4> box;  ///< top-left, top-right, bottom-right, bottom-left (image pixels)
  float score = 0;                 ///< mean probability inside the box (before unclip)
};

/// The minimum-area rectangle of points (cv::minAreaRect) as 4 corners ordered top-left, top-right,
/// bottom-right, bottom-left (PaddleOCR's get_mini_boxes), and its shorter side in short_side.
std::array<cv::Point2f, 4> db_mini_box(const std::vector<cv::Point2f>& pts, float& short_side);

/// A box grown by area * ratio / perimeter (Clipper's rounded offset of the corners rounded to
/// integers; PaddleOCR's unclip): the grown polygon's points, empty if Clipper returns none.
std::vector<cv::Point2f> db_unclip(const std::array<cv::Point2f, 4>& box, float ratio);

/// DB post-processing of a probability map (h x w, rows top first) computed for an image of
/// img_h x img_w: the text boxes in image pixels, top to bottom, left to right within a line
/// (PaddleOCR's sorted_boxes). Throws std::invalid_argument unless prob holds h * w values, both
/// positive. Keeps its scratch buffers (h x w bytes and a box's mask) per calling thread; the
/// candidates' boxes (one per contour) are computed on OpenCV's thread pool (cv::parallel_for_),
/// the result the same as one after the other.
std::vector<DetBox> db_boxes(const std::vector<float>& prob, int h, int w, int img_h, int img_w,
                             const DbOptions& options = {});

}  // namespace ocr
