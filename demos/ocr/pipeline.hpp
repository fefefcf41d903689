// PaddleOCR's PP-OCR pipeline on gltensor::Model: text detection (DBNet; its pre- and
// post-processing in demos/ocr_det, shared with the graphics demo), optional text
// angle classification, text recognition (SVTR-LCNet with CTC; greedy decoding). Pre- and
// post-processing follow PaddleOCR's (DetResizeForTest, NormalizeImage, DBPostProcess,
// get_rotate_crop_image, ClsResizeImg, RecResizeImg, CTCLabelDecode) with OpenCV's imgproc and
// the Clipper library for the geometry; recognition batches lines by width as PaddleOCR's
// TextRecognizer does (rec_batches.hpp).
#pragma once
#include <array>
#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "det.hpp"
#include "gltensor/gltensor.hpp"
#include "image.hpp"
#include "rec_batches.hpp"

namespace ocr {

struct OcrOptions {
  std::string det_model, rec_model, cls_model, keys;  ///< cls_model may be empty
  int det_limit = 960;                                ///< longer image side is scaled down to at most this (det_size)
  float det_threshold = 0.3f;                         ///< probability -> bitmap
  float box_threshold = 0.6f;                         ///< minimum mean probability inside a box
  float unclip_ratio = 1.5f;                          ///< box growth: area * ratio / perimeter
  RecBatchOptions rec;  ///< recognizer input height, narrowest width, lines per call, width rounding
  bool use_cls = false;
  int cls_width = 192;  ///< the angle classifier's input width (cls_image_shape 3, 48, 192)
  float cls_threshold = 0.9f;
  bool f16_weights = false;
  /// The page goes up once as bytes and every model input (det's resize, each line's crop,
  /// turns and resize, normalization, padding) is cut from it on the GPU: det's by
  /// gltensor::warp_perspective, the lines' by gltensor::crop_resize (the host path's bicubic
  /// crop and bilinear resize in OpenCV's 8-bit arithmetic; see line_warp). false: PaddleOCR's
  /// host steps with OpenCV and float uploads.
  bool gpu_images = true;
  /// Each model records its run of a set of input shapes once and replays it later
  /// (gltensor::ModelOptions::replay): no per-node host work on runs of shapes seen before. The
  /// recognizer keeps rec_replay_shapes recordings (its batches' widths recur from page to page
  /// where they are bucketed: RecBatchOptions::align), the detector and classifier one each; each
  /// recording holds one run's buffers. A page's recognizer batches run in one Model::run_many:
  /// those replayed go together, their dispatches interleaved under shared barriers.
  bool replay = false;
  int rec_replay_shapes = 8;
};

struct TextLine {
  std::array<cv::Point2f, 4> box;  ///< top-left, top-right, bottom-right, bottom-left (image pixels)
  std::string text;
  float confidence = 0;     ///< mean probability of the decoded characters
  float box_score = 0;      ///< mean detection probability inside the box
  bool rotated180 = false;  ///< the angle classifier turned the crop
};

/// Where a run's time went (wall-clock ms on the host; a model's time includes its input's
/// upload and its output's read-back) and the input shapes the models were given.
struct OcrTimings {
  double det_pre_ms = 0;  ///< resize + normalize for the detector
  double det_ms = 0;      ///< the detector (upload, run, read-back)
  double post_ms = 0;     ///< DB post-processing and the line crops
  double cls_ms = 0;      ///< angle classification: inputs, the classifier, turning crops
  double rec_pre_ms = 0;  ///< the recognizer's inputs (resize, normalize, pad), all batches
  double rec_ms = 0;      ///< the recognizer calls (upload, run, read-back), all batches
  double decode_ms = 0;   ///< CTC decoding
  double total_ms = 0;
  gltensor::Shape det_shape, cls_shape;     ///< cls_shape empty without classification
  std::vector<gltensor::Shape> rec_shapes;  ///< one per recognizer call
  std::int64_t rec_line_columns = 0;        ///< the lines' resized widths, summed (columns of text)
  std::int64_t rec_run_columns = 0;         ///< lines x width over the recognizer calls (padding included)
};

/// A model input as given to the model (for benchmarks that feed the same values elsewhere).
struct ModelInput {
  std::vector<float> values;  ///< empty where the input was made on the GPU (gpu_images)
  gltensor::Shape shape;
  gltensor::Tensor tensor;  ///< the input as given to the model
  /// The values, read back from the tensor where they were made on the GPU.
  std::vector<float> host_values() const { return values.empty() && tensor.defined() ? tensor.to_vector() : values; }
};

/// Where a text line's crop comes from: the homography from the crop's pixels to the image's
/// (OpenCV's warpPerspective map of OcrPipeline::crop, with its turn of tall crops) and the
/// crop's size (width x height, after the turn).
struct LineWarp {
  gltensor::ImageWarp warp;
  cv::Size size;
};
/// The crop of a box as OcrPipeline::crop cuts it, as a map instead of pixels.
LineWarp line_warp(const std::array<cv::Point2f, 4>& box);

class OcrPipeline {
 public:
  OcrPipeline(const gltensor::Device& dev, const OcrOptions& options);
  /// Reads every text line of an RGB image, top to bottom.
  std::vector<TextLine> run(const cv::Mat& rgb, OcrTimings* timings = nullptr);
  /// run's steps after the detector, for boxes already found (a test's second batching of one
  /// page's lines without running the detector again): each box cropped from `rgb`, classified
  /// (where on) and recognized; `lines`' texts, confidences and turns replaced. The timings' det
  /// fields and det_shape stay empty.
  std::vector<TextLine> recognize_lines(const cv::Mat& rgb, std::vector<TextLine> lines, OcrTimings* timings = nullptr);

  /// Changes how later runs batch the recognizer's lines (see rec_batches).
  void set_rec_batching(const RecBatchOptions& rec);
  /// Turns angle classification on or off for later runs (on needs the cls model loaded).
  void set_use_cls(bool on);
  /// The detector's longer side for later runs (OcrOptions::det_limit; positive).
  void set_det_limit(int limit);
  /// Chooses where later runs make the models' inputs (OcrOptions::gpu_images).
  void set_gpu_images(bool on) { opt_.gpu_images = on; }
  const OcrOptions& options() const { return opt_; }

  /// The steps, for tests: the detector's input [1, 3, H, W] (BGR, ImageNet-normalized, sides
  /// from det_size) and the scale from it back to the image; its probability map -> boxes;
  /// a crop's recognizer input [1, 3, 48, width] (resized to rec_resized_width, zero-padded);
  /// CTC greedy decoding of [N, T, C] probabilities.
  std::vector<float> det_input(const cv::Mat& rgb, int& h, int& w) const;
  /// The same on the GPU (gpu_images): the image uploaded as bytes, uint8 [H, W, 3], and the
  /// detector's input made from it (bilinear resize as cv::resize's, normalized, BGR planes).
  gltensor::Tensor upload_image(const cv::Mat& rgb) const;
  gltensor::Tensor det_input(const gltensor::Tensor& image, int& h, int& w) const;
  std::vector<TextLine> boxes_from_map(const std::vector<float>& prob, int h, int w, int img_h, int img_w) const;
  std::vector<float> rec_input(const cv::Mat& crop, int width) const;
  std::vector<std::pair<std::string, float>> ctc_decode(const std::vector<float>& probs, std::int64_t n, std::int64_t t,
                                                        std::int64_t c) const;
  /// The same from each step's best class (the first on ties) and its probability, [N, T] each
  /// (what recognition reads back: argmax runs on the GPU, the probability is gathered at it).
  std::vector<std::pair<std::string, float>> ctc_decode_best(const std::vector<float>& best,
                                                             const std::vector<float>& prob, std::int64_t n,
                                                             std::int64_t t) const;
  /// The inputs of the last run's detector, classifier (none without classification) and
  /// recognizer calls, in call order.
  const ModelInput& last_det_input() const { return last_det_; }
  const std::vector<ModelInput>& last_cls_inputs() const { return last_cls_; }
  const std::vector<ModelInput>& last_rec_inputs() const { return last_rec_; }
  gltensor::Model& det() { return det_; }
  gltensor::Model& rec() { return rec_; }
  /// The crop of a box, upright (perspective transform; tall crops turned by 90 degrees).
  static cv::Mat crop(const cv::Mat& rgb, const std::array<cv::Point2f, 4>& box);

 private:
  struct Crops;  // the lines' crops: pixels on the host or maps into the page on the GPU
  void classify(Crops& crops, std::vector<TextLine>& lines, OcrTimings& tm);
  void recognize(const Crops& crops, std::vector<TextLine>& lines, OcrTimings& tm);
  void crops_of(const std::vector<TextLine>& lines, const cv::Mat& rgb, Crops& crops) const;
  void read_crops(Crops& crops, std::vector<TextLine>& lines, OcrTimings& tm);

  gltensor::Device dev_;
  OcrOptions opt_;
  gltensor::Model det_, rec_;
  std::vector<gltensor::Model> cls_;  // zero or one
  std::vector<std::string> chars_;    // index 0: CTC blank
  ModelInput last_det_;
  std::vector<ModelInput> last_cls_, last_rec_;
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
