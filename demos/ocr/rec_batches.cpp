#include "rec_batches.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

namespace ocr {

namespace {

double aspect(cv::Size s) { return static_cast<double>(s.width) / s.height; }

// PaddleOCR's width of a batch whose widest line has this aspect ratio (max_wh_ratio starts at
// min_width / height; imgW = int(height * max_wh_ratio)), rounded up to a multiple of align.
int batch_width(double ratio, const RecBatchOptions& o) {
  const int paddle = std::max(o.min_width, static_cast<int>(o.height * ratio));
  return (paddle + o.align - 1) / o.align * o.align;
}

// The first line of each batch (and order.size() at the end) of the cheapest cut of the sorted
// lines into batches of at most `per` lines: cost(batch) = call_cost + lines x width, where the
// width is its last (widest) line's. Dynamic programming over the prefixes, O(lines x per).
std::vector<std::size_t> cheapest_cuts(const std::vector<int>& widths, std::size_t per, std::int64_t call_cost) {
  const std::size_t n = widths.size();
  std::vector<std::int64_t> best(n + 1, std::numeric_limits<std::int64_t>::max());
  std::vector<std::size_t> from(n + 1, 0);
  best[0] = 0;
  for (std::size_t end = 1; end <= n; ++end)
    for (std::size_t begin = end - std::min(end, per); begin < end; ++begin) {
      const std::int64_t c = best[begin] + call_cost + static_cast<std::int64_t>(end - begin) * widths[end - 1];
      if (c < best[end]) {  // ties: the earlier cut, fewer calls
        best[end] = c;
        from[end] = begin;
      }
    }
  std::vector<std::size_t> cuts{n};
  for (std::size_t end = n; end > 0; end = from[end]) cuts.push_back(from[end]);
  std::reverse(cuts.begin(), cuts.end());
  return cuts;
}

}  // namespace

int rec_resized_width(cv::Size crop, int height, int width) {
  const double w = std::ceil(height * aspect(crop));
  return std::max(1, static_cast<int>(std::min(static_cast<double>(width), w)));
}

std::vector<RecBatch> rec_batches(const std::vector<cv::Size>& crops, const RecBatchOptions& o) {
  if (o.height <= 0 || o.min_width <= 0 || o.align <= 0 || o.call_cost < 0)
    throw std::invalid_argument("rec_batches: height " + std::to_string(o.height) + ", min_width " +
                                std::to_string(o.min_width) + " and align " + std::to_string(o.align) +
                                " must be positive, call_cost " + std::to_string(o.call_cost) + " not negative");
  for (std::size_t i = 0; i < crops.size(); ++i)
    if (crops[i].width <= 0 || crops[i].height <= 0)
      throw std::invalid_argument("rec_batches: crop " + std::to_string(i) + " is " + std::to_string(crops[i].width) +
                                  " x " + std::to_string(crops[i].height) + " (width and height must be positive)");
  std::vector<std::size_t> order(crops.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return aspect(crops[a]) < aspect(crops[b]); });
  const std::size_t per = o.batch > 0 ? static_cast<std::size_t>(o.batch) : std::max<std::size_t>(crops.size(), 1);
  std::vector<std::size_t> cuts;
  if (o.call_cost > 0) {
    std::vector<int> widths;
    for (std::size_t i : order) widths.push_back(batch_width(aspect(crops[i]), o));
    cuts = cheapest_cuts(widths, per, o.call_cost);
  } else {
    for (std::size_t begin = 0; begin < order.size(); begin += per) cuts.push_back(begin);
    cuts.push_back(order.size());
  }
  std::vector<RecBatch> batches;
  for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
    RecBatch b;
    b.lines.assign(order.begin() + static_cast<std::ptrdiff_t>(cuts[k]),
                   order.begin() + static_cast<std::ptrdiff_t>(cuts[k + 1]));
    double ratio = 0;
    for (std::size_t i : b.lines) ratio = std::max(ratio, aspect(crops[i]));
    b.width = batch_width(ratio, o);
    batches.push_back(std::move(b));
  }
  return batches;
}

}  // namespace ocr
