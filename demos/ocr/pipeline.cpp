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

Model load_model(const Device& dev, const std::string& path, const OcrOptions& o, int replay_shapes = 1) {
  ModelOptions mo;
  mo.f16_weights = o.f16_weights;
  mo.replay = o.replay;
  mo.replay_shapes = replay_shapes;
  return Model::load(dev, path, mo);
}

// o, after checking the options that the models do not (before any model loads).
const OcrOptions& checked(const OcrOptions& o) {
  rec_batches({}, o.rec);
  if (o.cls_width <= 0 || o.det_limit <= 0 || o.rec_replay_shapes <= 0)
    throw std::invalid_argument("OcrOptions: cls_width " + std::to_string(o.cls_width) + ", det_limit " +
                                std::to_string(o.det_limit) + " and rec_replay_shapes " +
                                std::to_string(o.rec_replay_shapes) + " must be positive");
  return o;
}

}  // namespace

OcrPipeline::OcrPipeline(const Device& dev, const OcrOptions& o)
    : dev_(dev),
      opt_(checked(o)),
      det_(load_model(dev, o.det_model, o)),
      rec_(load_model(dev, o.rec_model, o, o.rec_replay_shapes)) {
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

Tensor OcrPipeline::upload_image(const cv::Mat& rgb) const {
  if (rgb.type() != CV_8UC3) throw std::invalid_argument("OcrPipeline: the image must be 8-bit RGB");
  const cv::Mat dense = rgb.isContinuous() ? rgb : rgb.clone();
  // from_bytes: the pixels as they are (from_host converts element by element).
  return Tensor::from_bytes(dev_, dense.data, dense.total() * 3, {dense.rows, dense.cols, 3}, DType::u8);
}

Tensor OcrPipeline::det_input(const Tensor& image, int& h, int& w) const {
  const auto rows = static_cast<int>(image.size(0)), cols = static_cast<int>(image.size(1));
  det_size(rows, cols, opt_.det_limit, h, w);
  const ImageNormalize norm{.scale = 1.0 / 255,
                            .mean = {kDetMean[0], kDetMean[1], kDetMean[2], 0},
                            .stdv = {kDetStd[0], kDetStd[1], kDetStd[2], 1},
                            .reverse_channels = true,
                            .pad = 0};
  return warp_perspective(image, std::vector{resize_warp(rows, cols, h, w)}, h, w, norm);
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

namespace {

// The corners' target rectangle of a box's crop and its size (PaddleOCR's get_rotate_crop_image).
cv::Size crop_size(const std::array<cv::Point2f, 4>& b) {
  const float w = std::max(cv::norm(b[0] - b[1]), cv::norm(b[2] - b[3]));
  const float h = std::max(cv::norm(b[0] - b[3]), cv::norm(b[1] - b[2]));
  return {std::max(1, static_cast<int>(w)), std::max(1, static_cast<int>(h))};
}

cv::Mat crop_transform(const std::array<cv::Point2f, 4>& b, cv::Size s) {
  const cv::Point2f dst[4] = {{0, 0},
                              {static_cast<float>(s.width), 0},
                              {static_cast<float>(s.width), static_cast<float>(s.height)},
                              {0, static_cast<float>(s.height)}};
  return cv::getPerspectiveTransform(b.data(), dst);
}

// Tall crops are turned by 90 degrees counter-clockwise (PaddleOCR: h / w >= 1.5).
bool turned(cv::Size s) { return static_cast<float>(s.height) / s.width >= 1.5f; }

// The map of cv::rotate(ROTATE_180) of a w x h picture: (x, y) <- (w - 1 - x, h - 1 - y).
ImageWarp turn180(cv::Size s) { return {.m = {-1, 0, s.width - 1.0, 0, -1, s.height - 1.0, 0, 0, 1}, .width = -1}; }

}  // namespace

cv::Mat OcrPipeline::crop(const cv::Mat& rgb, const std::array<cv::Point2f, 4>& b) {
  const cv::Size s = crop_size(b);
  cv::Mat out;
  cv::warpPerspective(rgb, out, crop_transform(b, s), s, cv::INTER_CUBIC, cv::BORDER_REPLICATE);
  if (turned(s)) cv::rotate(out, out, cv::ROTATE_90_COUNTERCLOCKWISE);
  return out;
}

LineWarp line_warp(const std::array<cv::Point2f, 4>& b) {
  const cv::Size s = crop_size(b);
  const cv::Mat inv = crop_transform(b, s).inv();  // crop pixel -> image point
  LineWarp r;
  for (int i = 0; i < 9; ++i) r.warp.m[static_cast<std::size_t>(i)] = inv.at<double>(i / 3, i % 3);
  r.size = s;
  if (turned(s)) {
    // cv::rotate(ROTATE_90_COUNTERCLOCKWISE): turned (x, y) <- (w - 1 - y, x); w x h -> h x w.
    r.warp = compose(ImageWarp{.m = {0, -1, s.width - 1.0, 1, 0, 0, 0, 0, 1}, .width = -1}, r.warp);
    r.size = {s.height, s.width};
  }
  return r;
}

std::vector<float> OcrPipeline::rec_input(const cv::Mat& crop, int width) const {
  const int H = opt_.rec.height;
  cv::Mat resized;
  cv::resize(crop, resized, cv::Size(rec_resized_width(crop.size(), H, width), H));
  static const float mean[3] = {0.5f, 0.5f, 0.5f}, stdv[3] = {0.5f, 0.5f, 0.5f};
  std::vector<float> x(static_cast<std::size_t>(3) * H * width, 0.0f);
  to_chw_bgr(resized, mean, stdv, x, width);
  return x;
}

std::vector<std::pair<std::string, float>> OcrPipeline::ctc_decode(const std::vector<float>& p, std::int64_t n,
                                                                   std::int64_t t, std::int64_t c) const {
  std::vector<float> best(static_cast<std::size_t>(n * t)), prob(best.size());
  for (std::size_t r = 0; r < best.size(); ++r) {
    const float* row = p.data() + static_cast<std::int64_t>(r) * c;
    const std::int64_t b = std::max_element(row, row + c) - row;
    best[r] = static_cast<float>(b);
    prob[r] = row[b];
  }
  return ctc_decode_best(best, prob, n, t);
}

std::vector<std::pair<std::string, float>> OcrPipeline::ctc_decode_best(const std::vector<float>& best_class,
                                                                        const std::vector<float>& prob, std::int64_t n,
                                                                        std::int64_t t) const {
  std::vector<std::pair<std::string, float>> r;
  for (std::int64_t i = 0; i < n; ++i) {
    std::string text;
    double conf = 0;
    int count = 0;
    std::int64_t prev = -1;
    for (std::int64_t s = 0; s < t; ++s) {
      const std::size_t k = static_cast<std::size_t>(i * t + s);
      const auto best = static_cast<std::int64_t>(best_class[k]);
      if (best != 0 && best != prev && best < static_cast<std::int64_t>(chars_.size())) {
        text += chars_[static_cast<std::size_t>(best)];
        conf += prob[k];
        ++count;
      }
      prev = best;
    }
    r.emplace_back(text, count ? static_cast<float>(conf / count) : 0.0f);
  }
  return r;
}

void OcrPipeline::set_rec_batching(const RecBatchOptions& rec) {
  rec_batches({}, rec);  // validates
  opt_.rec = rec;
}

void OcrPipeline::set_det_limit(int limit) {
  OcrOptions o = opt_;
  o.det_limit = limit;
  opt_ = checked(o);
}

void OcrPipeline::set_use_cls(bool on) {
  if (on && cls_.empty()) throw std::runtime_error("angle classification needs the cls model");
  opt_.use_cls = on;
}

// The lines' crops: OpenCV pictures (host path), or maps into the page already on the GPU.
struct OcrPipeline::Crops {
  std::vector<cv::Mat> mats;  // host path
  Tensor page;                // GPU path: the image, uint8 [H, W, 3]
  std::vector<LineWarp> warps;

  std::size_t size() const { return page.defined() ? warps.size() : mats.size(); }
  cv::Size crop_size(std::size_t i) const { return page.defined() ? warps[i].size : mats[i].size(); }
  void turn_around(std::size_t i) {
    if (page.defined())
      warps[i].warp = compose(turn180(warps[i].size), warps[i].warp);
    else
      cv::rotate(mats[i], mats[i], cv::ROTATE_180);
  }
};

namespace {

// PaddleOCR's rec / cls normalization ((v / 255 - 0.5) / 0.5, BGR) and zero padding.
constexpr ImageNormalize kRecNormalize{
    .scale = 1.0 / 255, .mean = {0.5, 0.5, 0.5, 0}, .stdv = {0.5, 0.5, 0.5, 1}, .reverse_channels = true, .pad = 0};

// The inputs of one model call: each crop's input (width columns) one after the other. On the
// GPU path the tensor is made (one warp of the page per line); on the host path only the values.
template <typename CropsT>
ModelInput batch_input(const OcrPipeline& p, const CropsT& crops, const std::vector<std::size_t>& which, int height,
                       int width) {
  ModelInput in;
  in.shape = {static_cast<std::int64_t>(which.size()), 3, height, width};
  if (crops.page.defined()) {
    // PaddleOCR's crop (bicubic) and resize (bilinear) in one dispatch, from the page.
    std::vector<ImageCrop> cs;
    for (std::size_t i : which) {
      const LineWarp& l = crops.warps[i];
      cs.push_back({.m = l.warp.m,
                    .crop_w = l.size.width,
                    .crop_h = l.size.height,
                    .width = rec_resized_width(l.size, height, width)});
    }
    in.tensor = crop_resize(crops.page, cs, height, width, kRecNormalize);
    return in;
  }
  in.values.reserve(static_cast<std::size_t>(numel_of(in.shape)));
  for (std::size_t i : which) {
    const auto one = p.rec_input(crops.mats[i], width);
    in.values.insert(in.values.end(), one.begin(), one.end());
  }
  return in;
}

// The model's tensor of an input (uploaded where it was made on the host).
const Tensor& input_tensor(const Device& dev, ModelInput& in) {
  if (!in.tensor.defined()) in.tensor = Tensor::from_host(dev, in.values, in.shape);
  return in.tensor;
}

}  // namespace

void OcrPipeline::classify(Crops& crops, std::vector<TextLine>& lines, OcrTimings& tm) {
  // One call for every line at 48 x cls_width: PaddleOCR's TextClassifier pads each line to that
  // fixed width, so batching changes nothing but the number of calls.
  const auto t0 = Clock::now();
  std::vector<std::size_t> all(crops.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  last_cls_.assign(1, batch_input(*this, crops, all, opt_.rec.height, opt_.cls_width));
  ModelInput& in = last_cls_[0];
  tm.cls_shape = in.shape;
  auto out = cls_[0].run({{cls_[0].inputs()[0].name, input_tensor(dev_, in)}});
  const auto p = out.begin()->second.to_vector();
  for (std::size_t i = 0; i < crops.size(); ++i)
    if (p[i * 2 + 1] > p[i * 2] && p[i * 2 + 1] > opt_.cls_threshold) {
      crops.turn_around(i);
      lines[i].rotated180 = true;
    }
  tm.cls_ms = ms_since(t0);
}

void OcrPipeline::recognize(const Crops& crops, std::vector<TextLine>& lines, OcrTimings& tm) {
  const auto t0 = Clock::now();
  std::vector<cv::Size> sizes;
  for (std::size_t i = 0; i < crops.size(); ++i) sizes.push_back(crops.crop_size(i));
  const auto batches = rec_batches(sizes, opt_.rec);
  // Every batch is queued before the first is read back, and the batches run in one
  // Model::run_many: where their shapes are replayed, their dispatches interleave under shared
  // barriers (the GPU runs two batches' small dispatches side by side).
  last_rec_.clear();
  std::vector<AsyncRead> reads;
  std::vector<Shape> out_shapes;
  std::vector<std::map<std::string, Tensor>> ins;
  double pre = 0, decode = 0;
  const auto tp = Clock::now();
  for (const auto& b : batches) {
    last_rec_.push_back(batch_input(*this, crops, b.lines, opt_.rec.height, b.width));
    ModelInput& in = last_rec_.back();
    tm.rec_shapes.push_back(in.shape);
    tm.rec_run_columns += static_cast<std::int64_t>(b.lines.size()) * b.width;
    for (std::size_t i : b.lines) tm.rec_line_columns += rec_resized_width(sizes[i], opt_.rec.height, b.width);
    ins.push_back({{rec_.inputs()[0].name, input_tensor(dev_, in)}});
  }
  pre += ms_since(tp);
  for (const auto& out : rec_.run_many(ins)) {
    // [N, T, classes] -> each step's best class and its probability, on the GPU: the read-back
    // is [N, T] twice instead of the whole distribution (6625 classes per step). The probability
    // is gathered at the best class (the row's max, as amax), not reduced over the row again.
    const Tensor& probs = out.begin()->second;
    out_shapes.push_back(probs.shape());
    const Tensor best = argmax(probs, -1, true);
    reads.push_back(best.to_host_async());
    reads.push_back(gather(probs, -1, best).to_host_async());
  }
  for (std::size_t k = 0; k < batches.size(); ++k) {
    const auto best = reads[2 * k].get_float();
    const auto prob = reads[2 * k + 1].get_float();
    const auto td = Clock::now();
    const Shape& s = out_shapes[k];
    const auto decoded = ctc_decode_best(best, prob, s[0], s[1]);
    for (std::size_t j = 0; j < batches[k].lines.size(); ++j) {
      TextLine& l = lines[batches[k].lines[j]];
      l.text = decoded[j].first;
      l.confidence = decoded[j].second;
    }
    decode += ms_since(td);
  }
  tm.rec_pre_ms = pre;
  tm.decode_ms = decode;
  tm.rec_ms = ms_since(t0) - pre - decode;
}

std::vector<TextLine> OcrPipeline::run(const cv::Mat& rgb, OcrTimings* timings) {
  OcrTimings tm;
  const auto t0 = Clock::now();
  // ---- detection ----
  int h = 0, w = 0;
  Crops crops;
  if (opt_.gpu_images) {
    // One upload of the page as bytes; det's input resized and normalized from it on the GPU.
    crops.page = upload_image(rgb);
    last_det_ = {.values = {}, .shape = {}, .tensor = det_input(crops.page, h, w)};
    last_det_.shape = last_det_.tensor.shape();
  } else {
    last_det_ = {.values = det_input(rgb, h, w), .shape = {1, 3, h, w}, .tensor = {}};
  }
  tm.det_shape = last_det_.shape;
  tm.det_pre_ms = ms_since(t0);
  const auto t1 = Clock::now();
  auto det_out = det_.run({{det_.inputs()[0].name, input_tensor(dev_, last_det_)}});
  const auto prob = det_out.begin()->second.to_vector();
  tm.det_ms = ms_since(t1);
  const auto t2 = Clock::now();
  auto lines = boxes_from_map(prob, h, w, rgb.rows, rgb.cols);
  crops_of(lines, rgb, crops);
  tm.post_ms = ms_since(t2);
  read_crops(crops, lines, tm);
  tm.total_ms = ms_since(t0);
  if (timings) *timings = tm;
  return lines;
}

std::vector<TextLine> OcrPipeline::recognize_lines(const cv::Mat& rgb, std::vector<TextLine> lines,
                                                   OcrTimings* timings) {
  OcrTimings tm;
  const auto t0 = Clock::now();
  Crops crops;
  if (opt_.gpu_images) crops.page = upload_image(rgb);
  for (auto& l : lines) l.text.clear(), l.confidence = 0, l.rotated180 = false;
  crops_of(lines, rgb, crops);
  tm.post_ms = ms_since(t0);
  read_crops(crops, lines, tm);
  tm.total_ms = ms_since(t0);
  if (timings) *timings = tm;
  return lines;
}

void OcrPipeline::crops_of(const std::vector<TextLine>& lines, const cv::Mat& rgb, Crops& crops) const {
  for (const auto& l : lines) {
    if (crops.page.defined())
      crops.warps.push_back(line_warp(l.box));
    else
      crops.mats.push_back(crop(rgb, l.box));
  }
}

void OcrPipeline::read_crops(Crops& crops, std::vector<TextLine>& lines, OcrTimings& tm) {
  last_cls_.clear();
  last_rec_.clear();
  if (!lines.empty()) {
    if (opt_.use_cls) classify(crops, lines, tm);
    recognize(crops, lines, tm);
  }
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
