// How the OCR pipeline groups text lines into recognizer calls, after PaddleOCR's
// TextRecognizer (tools/infer/predict_rec.py, PP-OCRv4 defaults): lines sorted by aspect ratio
// (width / height), taken rec_batch_num = 6 at a time; each batch is padded to its widest line,
// imgW = int(48 * max_wh_ratio) with max_wh_ratio starting at 320 / 48, and each line resized to
// 48 x min(imgW, ceil(48 * ratio)) then zero-padded on the right. The results go back to the
// lines' original order. gltensor adds one thing: a batch's width may be rounded up to a
// multiple of `align` so that fewer distinct input shapes reach the model (each new shape is
// planned again and, on GPUs, tunes its matmuls once); the extra columns are the same zero
// padding PaddleOCR adds to every narrower line of a batch. And one thing more, off by default
// (call_cost): instead of cutting the sorted lines into fixed groups of rec_batch_num, cut them
// where it costs least, counting every column the recognizer runs (the lines' and their padding)
// plus a fixed cost per call (dispatch chains, synchronisation): a few wide calls of lines of
// similar widths rather than many, and no narrow line padded to a much wider one.
#pragma once
#include <cstddef>
#include <opencv2/core.hpp>
#include <vector>

namespace ocr {

struct RecBatchOptions {
  int height = 48;      ///< the recognizer's input height (rec_image_shape[1])
  int min_width = 320;  ///< the narrowest batch (rec_image_shape[2])
  int batch = 6;        ///< lines per call (rec_batch_num), or at most this many with call_cost; 0 or less: no limit
  int align = 32;       ///< batch widths rounded up to a multiple of this; 1: PaddleOCR's widths
  /// 0: PaddleOCR's fixed groups of `batch` lines. > 0: a call's fixed cost in columns (one
  /// column: the recognizer's work for one input column of one line); the sorted lines are cut
  /// into the contiguous groups (at most `batch` lines each) that minimise the sum over calls of
  /// call_cost + lines x width.
  int call_cost = 0;
};

struct RecBatch {
  std::vector<std::size_t> lines;  ///< indices into the crops, by increasing aspect ratio
  int width = 0;                   ///< the batch's input width (columns)
};

/// The recognizer calls for crops of these sizes (width x height in pixels, each at least 1 x 1),
/// in PaddleOCR's order: lines sorted by width / height (ties keep their input order), cut into
/// batches of options.batch (or, with options.call_cost, the cheapest cut into batches of at most
/// options.batch lines). Every index appears in exactly one batch. Throws std::invalid_argument for
/// an empty size, a non-positive height, min_width or align, or a negative call_cost.
std::vector<RecBatch> rec_batches(const std::vector<cv::Size>& crops, const RecBatchOptions& options = {});

/// The resized width of a crop inside a batch of `width` columns: min(width, ceil(height * w / h)),
/// at least 1 (PaddleOCR's resize_norm_img).
int rec_resized_width(cv::Size crop, int height, int width);

}  // namespace ocr
