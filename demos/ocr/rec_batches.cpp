#include "rec_batches.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

namespace ocr {

namespace {

double aspect(cv::Size s) { return static_cast<double>(s.width) / s.height; }

}  // namespace

int rec_resized_width(cv::Size crop, int height, int width) {
  const double w = std::ceil(height * aspect(crop));
  return std::max(1, static_cast<int>(std::min(static_cast<double>(width), w)));
}

std::vector<RecBatch> rec_batches(const std::vector<cv::Size>& crops, const RecBatchOptions& o) {
  if (o.height <= 0 || o.min_width <= 0 || o.align <= 0)
    throw std::invalid_argument("rec_batches: height " + std::to_string(o.height) + ", min_width " +
                                std::to_string(o.min_width) + " and align " + std::to_string(o.align) +
                                " must be positive");
  for (std::size_t i = 0; i < crops.size(); ++i)
    if (crops[i].width <= 0 || crops[i].height <= 0)
      throw std::invalid_argument("rec_batches: crop " + std::to_string(i) + " is " + std::to_string(crops[i].width) +
                                  " x " + std::to_string(crops[i].height) + " (width and height must be positive)");
  std::vector<std::size_t> order(crops.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return aspect(crops[a]) < aspect(crops[b]); });
  const std::size_t per = o.batch > 0 ? static_cast<std::size_t>(o.batch) : std::max<std::size_t>(crops.size(), 1);
  std::vector<RecBatch> batches;
  for (std::size_t begin = 0; begin < order.size(); begin += per) {
    RecBatch b;
    b.lines.assign(order.begin() + static_cast<std::ptrdiff_t>(begin),
                   order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), begin + per)));
    // max_wh_ratio starts at min_width / height; imgW = int(height * max_wh_ratio).
    double ratio = 0;
    for (std::size_t i : b.lines) ratio = std::max(ratio, aspect(crops[i]));
    const int paddle = std::max(o.min_width, static_cast<int>(o.height * ratio));
    b.width = (paddle + o.align - 1) / o.align * o.align;
    batches.push_back(std::move(b));
  }
  return batches;
}

}  // namespace ocr
