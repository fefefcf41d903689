#include "det.hpp"

#include <algorithm>
#include <cmath>
#include <opencv2/core/utility.hpp>
#include <opencv2/imgproc.hpp>
#include <polyclipping/clipper.hpp>
#include <stdexcept>
#include <string>

namespace ocr {

std::array<cv::Point2f, 4> db_mini_box(const std::vector<cv::Point2f>& pts, float& short_side) {
  cv::RotatedRect r = cv::minAreaRect(pts);
  cv::Point2f p[4];
  r.points(p);
  std::sort(p, p + 4, [](const cv::Point2f& a, const cv::Point2f& b) { return a.x < b.x; });
  cv::Point2f tl = p[0], bl = p[1], tr = p[2], br = p[3];
  if (p[1].y < p[0].y) std::swap(tl, bl);
  if (p[3].y < p[2].y) std::swap(tr, br);
  short_side = std::min(r.size.width, r.size.height);
  return {tl, tr, br, bl};
}

namespace {

// Mean probability inside the polygon (PaddleOCR's box_score_fast): cv::fillPoly of the corners
// (truncated to integers) on a mask of the box's bounding rectangle, the probabilities under it
// summed row by row. The mask is `scratch`, grown as needed and reused from box to box.
float box_score(const std::vector<float>& prob, int h, int w, const std::array<cv::Point2f, 4>& box,
                std::vector<unsigned char>& scratch) {
  float x0 = w, x1 = 0, y0 = h, y1 = 0;
  for (const auto& p : box) {
    x0 = std::min(x0, p.x), x1 = std::max(x1, p.x), y0 = std::min(y0, p.y), y1 = std::max(y1, p.y);
  }
  const int xmin = std::clamp(static_cast<int>(std::floor(x0)), 0, w - 1),
            xmax = std::clamp(static_cast<int>(std::ceil(x1)), 0, w - 1),
            ymin = std::clamp(static_cast<int>(std::floor(y0)), 0, h - 1),
            ymax = std::clamp(static_cast<int>(std::ceil(y1)), 0, h - 1);
  const int mh = ymax - ymin + 1, mw = xmax - xmin + 1;
  scratch.assign(static_cast<std::size_t>(mh) * mw, 0);
  cv::Mat mask(mh, mw, CV_8UC1, scratch.data());
  cv::Point poly[4];
  for (int k = 0; k < 4; ++k)
    poly[k] = {static_cast<int>(box[static_cast<std::size_t>(k)].x) - xmin,
               static_cast<int>(box[static_cast<std::size_t>(k)].y) - ymin};
  const cv::Point* polys[1] = {poly};
  const int npts[1] = {4};
  cv::fillPoly(mask, polys, npts, 1, cv::Scalar(1));
  double sum = 0;
  int n = 0;
  for (int y = 0; y < mh; ++y) {
    const unsigned char* m = scratch.data() + static_cast<std::size_t>(y) * mw;
    const float* row = prob.data() + static_cast<std::size_t>(y + ymin) * w + xmin;
    for (int x = 0; x < mw; ++x)
      if (m[x]) {
        sum += row[x];
        ++n;
      }
  }
  return n ? static_cast<float>(sum / n) : 0.0f;
}

// 255 where prob > threshold (compared as floats, as cv::compare with a CV_32F map) into `bitmap`
// (h x w bytes, resized as needed); returns the bounding rectangle of the set pixels (empty if none).
cv::Rect threshold_map(const std::vector<float>& prob, int h, int w, float threshold,
                       std::vector<unsigned char>& bitmap, std::vector<unsigned char>& columns) {
  bitmap.resize(static_cast<std::size_t>(h) * w);
  columns.assign(static_cast<std::size_t>(w), 0);
  // Raw pointers: stores through unsigned char may alias a vector's own fields, which would keep
  // the compiler from vectorizing the loop.
  unsigned char* const col = columns.data();
  int ymin = h, ymax = -1;
  for (int y = 0; y < h; ++y) {
    const float* const p = prob.data() + static_cast<std::size_t>(y) * w;
    unsigned char* const b = bitmap.data() + static_cast<std::size_t>(y) * w;
    unsigned char any = 0;
    for (int x = 0; x < w; ++x) {
      const unsigned char v = p[x] > threshold ? 255 : 0;
      b[x] = v;
      col[x] |= v;
      any |= v;
    }
    if (any) ymin = std::min(ymin, y), ymax = y;
  }
  if (ymax < 0) return {};
  int xmin = 0, xmax = w - 1;
  while (!col[xmin]) ++xmin;
  while (!col[xmax]) --xmax;
  return {xmin, ymin, xmax - xmin + 1, ymax - ymin + 1};
}

}  // namespace

std::vector<cv::Point2f> db_unclip(const std::array<cv::Point2f, 4>& box, float ratio) {
  double area = 0, length = 0;
  for (int i = 0; i < 4; ++i) {
    const auto& a = box[i];
    const auto& b = box[(i + 1) % 4];
    area += static_cast<double>(a.x) * b.y - static_cast<double>(b.x) * a.y;
    length += std::hypot(b.x - a.x, b.y - a.y);
  }
  area = std::fabs(area) / 2;
  const double distance = length > 0 ? area * ratio / length : 0;
  ClipperLib::Path path;
  for (const auto& p : box)
    path.emplace_back(static_cast<ClipperLib::cInt>(std::lround(p.x)), static_cast<ClipperLib::cInt>(std::lround(p.y)));
  ClipperLib::ClipperOffset off;
  off.AddPath(path, ClipperLib::jtRound, ClipperLib::etClosedPolygon);
  ClipperLib::Paths out;
  off.Execute(out, distance);
  std::vector<cv::Point2f> r;
  if (!out.empty())
    for (const auto& p : out[0]) r.emplace_back(static_cast<float>(p.X), static_cast<float>(p.Y));
  return r;
}

void to_chw_bgr(const cv::Mat& rgb, const float mean[3], const float stdv[3], std::vector<float>& out, int width) {
  const int h = rgb.rows, w = rgb.cols;
  for (int c = 0; c < 3; ++c)  // c: B, G, R
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        const float v = rgb.at<cv::Vec3b>(y, x)[2 - c] / 255.0f;
        out[(static_cast<std::size_t>(c) * h + y) * width + x] = (v - mean[c]) / stdv[c];
      }
}

void det_size(int img_h, int img_w, int limit, int& h, int& w) {
  if (img_h <= 0 || img_w <= 0 || limit <= 0)
    throw std::invalid_argument("det_size: image " + std::to_string(img_w) + " x " + std::to_string(img_h) +
                                ", limit " + std::to_string(limit) + " (each must be positive)");
  const double ratio = std::max(img_h, img_w) > limit ? static_cast<double>(limit) / std::max(img_h, img_w) : 1.0;
  // int(side * ratio), then round(side / 32) * 32: std::nearbyint rounds ties to even.
  auto side = [&](int s) {
    return std::max(static_cast<int>(std::nearbyint(static_cast<int>(s * ratio) / 32.0)) * 32, 32);
  };
  h = side(img_h);
  w = side(img_w);
}

std::vector<float> det_input(const cv::Mat& rgb, int limit, int& h, int& w) {
  det_size(rgb.rows, rgb.cols, limit, h, w);
  cv::Mat resized;
  cv::resize(rgb, resized, cv::Size(w, h));
  std::vector<float> x(static_cast<std::size_t>(3) * h * w);
  to_chw_bgr(resized, kDetMean, kDetStd, x, w);
  return x;
}

std::vector<DetBox> db_boxes(const std::vector<float>& prob, int h, int w, int img_h, int img_w, const DbOptions& o) {
  if (h <= 0 || w <= 0 || prob.size() != static_cast<std::size_t>(h) * w)
    throw std::invalid_argument("db_boxes: a map of " + std::to_string(prob.size()) + " values for h x w = " +
                                std::to_string(h) + " x " + std::to_string(w) + " (expected h * w, both positive)");
  // The bitmap and the masks in buffers kept per thread (no allocation per call once grown), and
  // the contours traced on the set pixels' bounding rectangle only (outside it the bitmap is 0, so
  // the contours and their order are those of the whole map; offset back to map coordinates).
  thread_local std::vector<unsigned char> bitmap, columns;
  const cv::Rect roi = threshold_map(prob, h, w, o.det_threshold, bitmap, columns);
  if (roi.empty()) return {};
  std::vector<std::vector<cv::Point>> contours;
  cv::findContours(cv::Mat(h, w, CV_8UC1, bitmap.data())(roi), contours, cv::RETR_LIST, cv::CHAIN_APPROX_SIMPLE,
                   roi.tl());
  const float sx = static_cast<float>(img_w) / w, sy = static_cast<float>(img_h) / h;
  // Each candidate's box (minAreaRect, score, unclip, minAreaRect again) depends on its contour only:
  // the candidates run on OpenCV's thread pool, each into its own slot, kept in contour order.
  const std::size_t n = std::min(contours.size(), static_cast<std::size_t>(o.max_candidates));
  std::vector<DetBox> found(n);
  std::vector<unsigned char> kept(n, 0);
  auto candidate = [&](std::size_t i, std::vector<cv::Point2f>& pts, std::vector<unsigned char>& mask) {
    pts.assign(contours[i].begin(), contours[i].end());
    if (pts.size() < 4) return;
    float side = 0;
    auto box = db_mini_box(pts, side);
    if (side < 3) return;
    const float score = box_score(prob, h, w, box, mask);
    if (score < o.box_threshold) return;
    auto grown = db_unclip(box, o.unclip_ratio);
    if (grown.size() < 4) return;
    box = db_mini_box(grown, side);
    if (side < 5) return;
    DetBox& b = found[i];
    for (int k = 0; k < 4; ++k)
      b.box[k] = {std::clamp(std::round(box[k].x * sx), 0.0f, static_cast<float>(img_w)),
                  std::clamp(std::round(box[k].y * sy), 0.0f, static_cast<float>(img_h))};
    b.score = score;
    kept[i] = 1;
  };
  cv::parallel_for_(cv::Range(0, static_cast<int>(n)), [&](const cv::Range& r) {
    thread_local std::vector<cv::Point2f> pts;
    thread_local std::vector<unsigned char> box_mask;
    for (int i = r.start; i < r.end; ++i) candidate(static_cast<std::size_t>(i), pts, box_mask);
  });
  std::vector<DetBox> boxes;
  for (std::size_t i = 0; i < n; ++i)
    if (kept[i]) boxes.push_back(found[i]);
  // Top to bottom, left to right within a line (PaddleOCR's sorted_boxes).
  std::sort(boxes.begin(), boxes.end(), [](const DetBox& a, const DetBox& b) {
    if (std::fabs(a.box[0].y - b.box[0].y) < 10) return a.box[0].x < b.box[0].x;
    return a.box[0].y < b.box[0].y;
  });
  return boxes;
}

}  // namespace ocr
