#include "pipeline.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <opencv2/imgproc.hpp>
#include <stdexcept>

namespace ocr {

using namespace gltensor;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

Model load_model(const Device& dev, const std::string& path, const OcrOptions& o) {
  ModelOptions mo;
  mo.f16_weights = o.f16_weights;
  return Model::load(dev, path, mo);
}

}  // namespace

OcrPipeline::OcrPipeline(const Device& dev, const OcrOptions& o)
    : dev_(dev), opt_(o), det_(load_model(dev, o.det_model, o)), rec_(load_model(dev, o.rec_model, o)) {
  if (o.use_cls) {
    if (o.cls_model.empty()) throw std::runtime_error("angle classification needs the cls model");
    cls_.push_back(load_model(dev, o.cls_model, o));
  }
  std::ifstream f(o.keys);
  if (!f) throw std::runtime_error(o.keys + ": character list not found");
  chars_.push_back("");  // CTC blank
  for (std::string line; std::getline(f, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    chars_.push_back(line);
  }
  chars_.push_back(" ");  // use_space_char
}

std::vector<float> OcrPipeline::det_input(const cv::Mat& rgb, int& h, int& w) const {
  return ocr::det_input(rgb, opt_.det_limit, h, w);
}

std::vector<TextLine> OcrPipeline::boxes_from_map(const std::vector<float>& prob, int h, int w, int img_h,
                                                  int img_w) const {
  DbOptions db;
  db.det_threshold = opt_.det_threshold;
  db.box_threshold = opt_.box_threshold;
  db.unclip_ratio = opt_.unclip_ratio;
  std::vector<TextLine> lines;
  for (const DetBox& b : db_boxes(prob, h, w, img_h, img_w, db)) {
    TextLine l;
    l.box = b.box;
    l.box_score = b.score;
    lines.push_back(l);
  }
  return lines;
}

cv::Mat OcrPipeline::crop(const cv::Mat& rgb, const std::array<cv::Point2f, 4>& b) {
  const float w = std::max(cv::norm(b[0] - b[1]), cv::norm(b[2] - b[3]));
  const float h = std::max(cv::norm(b[0] - b[3]), cv::norm(b[1] - b[2]));
  const int cw = std::max(1, static_cast<int>(w)), ch = std::max(1, static_cast<int>(h));
  const cv::Point2f dst[4] = {{0, 0},
                              {static_cast<float>(cw), 0},
                              {static_cast<float>(cw), static_cast<float>(ch)},
                              {0, static_cast<float>(ch)}};
  cv::Mat m = cv::getPerspectiveTransform(b.data(), dst);
  cv::Mat out;
  cv::warpPerspective(rgb, out, m, cv::Size(cw, ch), cv::INTER_CUBIC, cv::BORDER_REPLICATE);
  if (static_cast<float>(out.rows) / out.cols >= 1.5f) cv::rotate(out, out, cv::ROTATE_90_COUNTERCLOCKWISE);
  return out;
}

std::vector<float> OcrPipeline::rec_input(const cv::Mat& crop, int width) const {
  const int H = opt_.rec_height;
  const double ratio = static_cast<double>(crop.cols) / crop.rows;
  const int rw = std::min(width, std::max(1, static_cast<int>(std::ceil(H * ratio))));
  cv::Mat resized;
  cv::resize(crop, resized, cv::Size(rw, H));
  static const float mean[3] = {0.5f, 0.5f, 0.5f}, stdv[3] = {0.5f, 0.5f, 0.5f};
  std::vector<float> x(static_cast<std::size_t>(3) * H * width, 0.0f);
  to_chw_bgr(resized, mean, stdv, x, width);
  return x;
}

std::vector<std::pair<std::string, float>> OcrPipeline::ctc_decode(const std::vector<float>& p, std::int64_t n,
                                                                   std::int64_t t, std::int64_t c) const {
  std::vector<std::pair<std::string, float>> r;
  for (std::int64_t i = 0; i < n; ++i) {
    std::string text;
    double conf = 0;
    int count = 0;
    std::int64_t prev = -1;
    for (std::int64_t s = 0; s < t; ++s) {
      const float* row = p.data() + (i * t + s) * c;
      const std::int64_t best = std::max_element(row, row + c) - row;
      if (best != 0 && best != prev && best < static_cast<std::int64_t>(chars_.size())) {
        text += chars_[static_cast<std::size_t>(best)];
        conf += row[best];
        ++count;
      }
      prev = best;
    }
    r.emplace_back(text, count ? static_cast<float>(conf / count) : 0.0f);
  }
  return r;
}

std::vector<TextLine> OcrPipeline::run(const cv::Mat& rgb, OcrTimings* timings) {
  OcrTimings tm;
  const auto t0 = Clock::now();
  // ---- detection ----
  int h = 0, w = 0;
  auto x = det_input(rgb, h, w);
  auto det_out = det_.run({{det_.inputs()[0].name, Tensor::from_host(dev_, x, {1, 3, h, w})}});
  last_det_ = x;
  last_det_shape_ = {1, 3, h, w};
  auto prob = det_out.begin()->second.to_vector();
  tm.det_ms = ms_since(t0);
  auto t1 = Clock::now();
  auto lines = boxes_from_map(prob, h, w, rgb.rows, rgb.cols);
  std::vector<cv::Mat> crops;
  for (const auto& l : lines) crops.push_back(crop(rgb, l.box));
  tm.post_ms = ms_since(t1);
  if (lines.empty()) {
    tm.total_ms = ms_since(t0);
    if (timings) *timings = tm;
    return lines;
  }
  const std::int64_t n = static_cast<std::int64_t>(crops.size());
  // ---- angle classification (batched, 48 x 192) ----
  if (!cls_.empty()) {
    auto t2 = Clock::now();
    const int CW = 192;
    std::vector<float> batch;
    for (const auto& c : crops) {
      auto one = rec_input(c, CW);
      batch.insert(batch.end(), one.begin(), one.end());
    }
    auto out = cls_[0].run({{cls_[0].inputs()[0].name, Tensor::from_host(dev_, batch, {n, 3, opt_.rec_height, CW})}});
    auto p = out.begin()->second.to_vector();
    for (std::int64_t i = 0; i < n; ++i)
      if (p[static_cast<std::size_t>(i * 2 + 1)] > p[static_cast<std::size_t>(i * 2)] &&
          p[static_cast<std::size_t>(i * 2 + 1)] > opt_.cls_threshold) {
        cv::rotate(crops[i], crops[i], cv::ROTATE_180);
        lines[i].rotated180 = true;
      }
    tm.cls_ms = ms_since(t2);
  }
  // ---- recognition (one batch at the widest crop's width) ----
  auto t3 = Clock::now();
  double max_ratio = static_cast<double>(opt_.rec_min_width) / opt_.rec_height;
  for (const auto& c : crops) max_ratio = std::max(max_ratio, static_cast<double>(c.cols) / c.rows);
  const int W = static_cast<int>(std::ceil(opt_.rec_height * max_ratio));
  std::vector<float> batch;
  for (const auto& c : crops) {
    auto one = rec_input(c, W);
    batch.insert(batch.end(), one.begin(), one.end());
  }
  auto out = rec_.run({{rec_.inputs()[0].name, Tensor::from_host(dev_, batch, {n, 3, opt_.rec_height, W})}});
  last_rec_ = batch;
  last_rec_shape_ = {n, 3, opt_.rec_height, W};
  const Tensor& probs = out.begin()->second;
  auto decoded = ctc_decode(probs.to_vector(), probs.size(0), probs.size(1), probs.size(2));
  for (std::int64_t i = 0; i < n; ++i) {
    lines[i].text = decoded[i].first;
    lines[i].confidence = decoded[i].second;
  }
  tm.rec_ms = ms_since(t3);
  tm.total_ms = ms_since(t0);
  if (timings) *timings = tm;
  return lines;
}

cv::Mat annotate(const cv::Mat& rgb, const std::vector<TextLine>& lines, const Font& font) {
  cv::Mat canvas(rgb.rows, rgb.cols * 2, CV_8UC3, cv::Scalar(255, 255, 255));
  rgb.copyTo(canvas(cv::Rect(0, 0, rgb.cols, rgb.rows)));
  static const cv::Scalar palette[] = {{230, 25, 75},  {60, 180, 75},  {0, 130, 200},  {245, 130, 48},
                                       {145, 30, 180}, {70, 190, 190}, {240, 50, 230}, {128, 128, 0}};
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const cv::Scalar color = palette[i % 8];
    std::vector<cv::Point> left, right;
    for (const auto& p : lines[i].box) {
      left.emplace_back(static_cast<int>(p.x), static_cast<int>(p.y));
      right.emplace_back(static_cast<int>(p.x) + rgb.cols, static_cast<int>(p.y));
    }
    cv::polylines(canvas, std::vector<std::vector<cv::Point>>{left}, true, color, 2, cv::LINE_AA);
    cv::polylines(canvas, std::vector<std::vector<cv::Point>>{right}, true, color, 1, cv::LINE_AA);
    const float bh = std::max(10.0f, static_cast<float>(cv::norm(lines[i].box[0] - lines[i].box[3])));
    float px = bh * 0.75f;
    const float bw = static_cast<float>(cv::norm(lines[i].box[0] - lines[i].box[1]));
    const int tw = font.width(lines[i].text, px);
    if (tw > bw && tw > 0) px *= bw / tw;
    font.draw(canvas, lines[i].text, static_cast<int>(lines[i].box[0].x) + rgb.cols,
              static_cast<int>(lines[i].box[0].y + bh * 0.78f), px, cv::Scalar(0, 0, 0));
  }
  return canvas;
}

std::string without_spaces(const std::string& s) {
  std::string r;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == ' ') continue;
    if (s.compare(i, 3, "\xE3\x80\x80") == 0) {
      i += 2;
      continue;
    }
    r += s[i];
  }
  return r;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  auto cps = [](const std::string& s) {
    std::vector<std::uint32_t> r;
    for (std::size_t i = 0; i < s.size(); ++i)
      if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80)
        r.push_back(static_cast<unsigned char>(s[i]));
      else
        r.back() = (r.back() << 6) | (static_cast<unsigned char>(s[i]) & 0x3F);
    return r;
  };
  const auto x = cps(a), y = cps(b);
  std::vector<std::size_t> prev(y.size() + 1), cur(y.size() + 1);
  for (std::size_t j = 0; j <= y.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= x.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= y.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x[i - 1] == y[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[y.size()];
}

}  // namespace ocr
