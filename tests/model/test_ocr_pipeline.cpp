// The OCR pipeline's planning steps, without models or a GPU: how text lines are grouped into
// recognizer calls (demos/ocr/rec_batches.hpp, after PaddleOCR's TextRecognizer) and the
// detector's input size (demos/ocr_det det_size, PaddleOCR's DetResizeForTest) and its DB
// post-processing (db_boxes). References are written independently here: exact integer arithmetic
// for the batch widths, a table of sizes computed by PaddleOCR's resize_image_type0 in Python for
// the detector, and DBPostProcess as plain OpenCV calls on whole-map images for the boxes.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <opencv2/imgproc.hpp>
#include <set>
#include <stdexcept>
#include <thread>
#include <tuple>

#include "det.hpp"
#include "rec_batches.hpp"
#include "test_util.hpp"

namespace {

// PaddleOCR's batch width for crops of these sizes: max(min_width, floor(height * w / h)) over
// the batch, by integer arithmetic, rounded up to a multiple of align.
int reference_width(const std::vector<cv::Size>& crops, const std::vector<std::size_t>& batch, int height,
                    int min_width, int align) {
  std::int64_t w = min_width;
  for (std::size_t i : batch)
    w = std::max<std::int64_t>(w, static_cast<std::int64_t>(height) * crops[i].width / crops[i].height);
  return static_cast<int>((w + align - 1) / align * align);
}

// a's aspect ratio is below b's, exactly (cross-multiplied).
bool narrower(cv::Size a, cv::Size b) {
  return static_cast<std::int64_t>(a.width) * b.height < static_cast<std::int64_t>(b.width) * a.height;
}

// n random crops of few distinct heights (8 .. 8 * heights) and widths (4 .. 4 * widths), so that
// equal ratios (ties) occur.
std::vector<cv::Size> random_crops(std::mt19937_64& rng, std::size_t n, int heights, int widths) {
  std::vector<cv::Size> crops(n);
  for (auto& c : crops) {
    c.height = 8 * std::uniform_int_distribution<int>(1, heights)(rng);
    c.width = 4 * std::uniform_int_distribution<int>(1, widths)(rng);
  }
  return crops;
}

// The reference order of the lines: by ratio, ties by input order.
std::vector<std::size_t> paddle_order(const std::vector<cv::Size>& crops) {
  std::vector<std::size_t> order(crops.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return narrower(crops[a], crops[b]) || (!narrower(crops[b], crops[a]) && a < b);
  });
  return order;
}

// PaddleOCR's DBPostProcess (box_type quad) as plain OpenCV calls on whole-map images, as db_boxes
// did before its scratch buffers and bounding rectangle: cv::compare over the whole map,
// findContours over the whole bitmap, each box's score under a fresh cv::fillPoly mask. The
// unchanged geometry (db_mini_box, db_unclip) is the library's.
std::vector<ocr::DetBox> reference_db_boxes(const std::vector<float>& prob, int h, int w, int img_h, int img_w,
                                            const ocr::DbOptions& o) {
  cv::Mat bitmap;
  cv::compare(cv::Mat(h, w, CV_32F, const_cast<float*>(prob.data())), o.det_threshold, bitmap, cv::CMP_GT);
  std::vector<std::vector<cv::Point>> contours;
  cv::findContours(bitmap, contours, cv::RETR_LIST, cv::CHAIN_APPROX_SIMPLE);
  auto score = [&](const std::array<cv::Point2f, 4>& box) {
    float x0 = w, x1 = 0, y0 = h, y1 = 0;
    for (const auto& p : box)
      x0 = std::min(x0, p.x), x1 = std::max(x1, p.x), y0 = std::min(y0, p.y), y1 = std::max(y1, p.y);
    const int xmin = std::clamp(static_cast<int>(std::floor(x0)), 0, w - 1),
              xmax = std::clamp(static_cast<int>(std::ceil(x1)), 0, w - 1),
              ymin = std::clamp(static_cast<int>(std::floor(y0)), 0, h - 1),
              ymax = std::clamp(static_cast<int>(std::ceil(y1)), 0, h - 1);
    cv::Mat mask = cv::Mat::zeros(ymax - ymin + 1, xmax - xmin + 1, CV_8UC1);
    std::vector<cv::Point> poly;
    for (const auto& p : box) poly.emplace_back(static_cast<int>(p.x) - xmin, static_cast<int>(p.y) - ymin);
    cv::fillPoly(mask, std::vector<std::vector<cv::Point>>{poly}, cv::Scalar(1));
    double sum = 0;
    int n = 0;
    for (int y = ymin; y <= ymax; ++y)
      for (int x = xmin; x <= xmax; ++x)
        if (mask.at<uchar>(y - ymin, x - xmin)) sum += prob[static_cast<std::size_t>(y) * w + x], ++n;
    return n ? static_cast<float>(sum / n) : 0.0f;
  };
  const float sx = static_cast<float>(img_w) / w, sy = static_cast<float>(img_h) / h;
  std::vector<ocr::DetBox> boxes;
  for (std::size_t i = 0; i < contours.size() && i < static_cast<std::size_t>(o.max_candidates); ++i) {
    if (contours[i].size() < 4) continue;
    float side = 0;
    auto box = ocr::db_mini_box(std::vector<cv::Point2f>(contours[i].begin(), contours[i].end()), side);
    const float s = side < 3 ? 0.0f : score(box);
    if (side < 3 || s < o.box_threshold) continue;
    const auto grown = ocr::db_unclip(box, o.unclip_ratio);
    if (grown.size() < 4) continue;
    box = ocr::db_mini_box(grown, side);
    if (side < 5) continue;
    ocr::DetBox b;
    for (std::size_t k = 0; k < 4; ++k)
      b.box[k] = {std::clamp(std::round(box[k].x * sx), 0.0f, static_cast<float>(img_w)),
                  std::clamp(std::round(box[k].y * sy), 0.0f, static_cast<float>(img_h))};
    b.score = s;
    boxes.push_back(b);
  }
  std::sort(boxes.begin(), boxes.end(), [](const ocr::DetBox& a, const ocr::DetBox& b) {
    return std::fabs(a.box[0].y - b.box[0].y) < 10 ? a.box[0].x < b.box[0].x : a.box[0].y < b.box[0].y;
  });
  return boxes;
}

// A probability map of h x w: noise below the threshold, `lines` rotated bars of probabilities
// around `level` (some past the map's edges, some thin or tiny), and single pixels set.
std::vector<float> random_det_map(std::mt19937_64& rng, int h, int w, int lines, float level) {
  std::vector<float> prob = glt_test::uniform(rng, static_cast<std::size_t>(h) * w, 0.0f, 0.29f);
  cv::Mat m(h, w, CV_32F, prob.data());
  std::uniform_real_distribution<float> u(0, 1);
  for (int k = 0; k < lines; ++k) {
    const cv::RotatedRect r({u(rng) * w * 1.1f - 0.05f * w, u(rng) * h * 1.1f - 0.05f * h},
                            {2 + u(rng) * w * 0.6f, 1 + u(rng) * 14}, (u(rng) - 0.5f) * (k % 3 ? 20 : 180));
    cv::Point2f c[4];
    r.points(c);
    std::vector<cv::Point> poly;
    for (const auto& p : c) poly.emplace_back(cvRound(p.x), cvRound(p.y));
    cv::fillConvexPoly(m, poly, cv::Scalar(std::min(1.0f, level + 0.3f * u(rng))));
  }
  for (int k = 0; k < lines; ++k) prob[static_cast<std::size_t>(u(rng) * (prob.size() - 1))] = 0.9f;
  // Every value of a bar's pixels a little apart, so the mean's summation order shows.
  for (auto& v : prob)
    if (v > 0.3f) v = std::min(1.0f, v + 0.05f * u(rng));
  return prob;
}

}  // namespace

TEST(RecBatches, RandomLinesFollowPaddleOcr) {
  GLT_RNG(rng);
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t n = std::uniform_int_distribution<std::size_t>(0, 40)(rng);
    const std::vector<cv::Size> crops = random_crops(rng, n, 12, 600);
    ocr::RecBatchOptions o;
    o.batch = std::vector<int>{1, 6, 7, 0, -1}[trial % 5];
    o.align = trial % 2 ? 32 : 1;
    SCOPED_TRACE("trial " + std::to_string(trial) + ": " + std::to_string(n) + " lines, batch " +
                 std::to_string(o.batch) + ", align " + std::to_string(o.align));
    const auto batches = ocr::rec_batches(crops, o);
    const std::vector<std::size_t> want = paddle_order(crops);
    std::vector<std::size_t> got;
    const std::size_t per = o.batch > 0 ? static_cast<std::size_t>(o.batch) : n;
    ASSERT_EQ(batches.size(), n == 0 ? 0 : (n + per - 1) / per);
    for (std::size_t k = 0; k < batches.size(); ++k) {
      const auto& b = batches[k];
      EXPECT_EQ(b.lines.size(), std::min(per, n - k * per)) << "batch " << k;
      got.insert(got.end(), b.lines.begin(), b.lines.end());
      EXPECT_EQ(b.width, reference_width(crops, b.lines, o.height, o.min_width, o.align)) << "batch " << k;
      EXPECT_EQ(b.width % o.align, 0);
      for (std::size_t i : b.lines) EXPECT_GE(b.width, ocr::rec_resized_width(crops[i], o.height, b.width));
    }
    EXPECT_EQ(got, want);
  }
}

TEST(RecBatches, EdgeCases) {
  ocr::RecBatchOptions o;
  o.align = 1;
  EXPECT_TRUE(ocr::rec_batches({}, o).empty());
  // One line: PaddleOCR's width floor(48 * 1000 / 37) = 1297; 32-aligned: 1312.
  auto one = ocr::rec_batches({cv::Size(1000, 37)}, o);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].lines, std::vector<std::size_t>{0});
  EXPECT_EQ(one[0].width, 1297);
  o.align = 32;
  EXPECT_EQ(ocr::rec_batches({cv::Size(1000, 37)}, o)[0].width, 1312);
  // Tall and tiny crops stay at the narrowest width; 1 x 1 is accepted.
  auto small = ocr::rec_batches({cv::Size(10, 40), cv::Size(1, 1), cv::Size(320, 48)}, o);
  ASSERT_EQ(small.size(), 1u);
  EXPECT_EQ(small[0].width, 320);
  EXPECT_EQ(small[0].lines, (std::vector<std::size_t>{0, 1, 2}));
  // Seven equal lines in batches of six: input order kept, the last batch holds one.
  auto same = ocr::rec_batches(std::vector<cv::Size>(7, cv::Size(200, 20)), o);
  ASSERT_EQ(same.size(), 2u);
  EXPECT_EQ(same[0].lines, (std::vector<std::size_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(same[1].lines, std::vector<std::size_t>{6});
  EXPECT_EQ(same[0].width, 480);
  EXPECT_EQ(same[1].width, 480);
  // Resized widths: ceil(48 * w / h), at most the batch width, at least 1.
  EXPECT_EQ(ocr::rec_resized_width(cv::Size(101, 48), 48, 320), 101);
  EXPECT_EQ(ocr::rec_resized_width(cv::Size(100, 47), 48, 320), 103);
  EXPECT_EQ(ocr::rec_resized_width(cv::Size(1000, 10), 48, 320), 320);
  EXPECT_EQ(ocr::rec_resized_width(cv::Size(1, 1000), 48, 320), 1);
}

TEST(RecBatches, BadInputThrows) {
  EXPECT_THROW(ocr::rec_batches({cv::Size(10, 10), cv::Size(0, 5)}), std::invalid_argument);
  EXPECT_THROW(ocr::rec_batches({cv::Size(10, -1)}), std::invalid_argument);
  ocr::RecBatchOptions o;
  o.align = 0;
  EXPECT_THROW(ocr::rec_batches({}, o), std::invalid_argument);
  o = {};
  o.height = 0;
  EXPECT_THROW(ocr::rec_batches({cv::Size(10, 10)}, o), std::invalid_argument);
  o = {};
  o.call_cost = -1;
  EXPECT_THROW(ocr::rec_batches({cv::Size(10, 10)}, o), std::invalid_argument);
  try {
    ocr::rec_batches({cv::Size(10, 10), cv::Size(0, 5)});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("crop 1 is 0 x 5"), std::string::npos) << e.what();
  }
}

TEST(DetSize, MatchesPaddleOcr) {
  // {image h, w, limit, PaddleOCR's h, w}: resize_image_type0 with limit_type max, run in Python
  // (int() before rounding; round() ties to even: 80 -> 64, 48 -> 64).
  const int cases[][5] = {
      {480, 800, 960, 480, 800}, {960, 960, 960, 960, 960},   {1080, 1920, 960, 544, 960}, {80, 100, 960, 64, 96},
      {10, 10, 960, 32, 32},     {2000, 1000, 960, 960, 480}, {1001, 1000, 960, 960, 960}, {1000, 1001, 960, 960, 960},
      {3000, 47, 960, 960, 32},  {720, 1280, 640, 352, 640},  {16, 2000, 960, 32, 960},    {976, 976, 960, 960, 960},
      {111, 49, 960, 96, 64},    {48, 80, 960, 64, 64},       {1, 1, 960, 32, 32},
  };
  for (const auto& c : cases) {
    int h = 0, w = 0;
    ocr::det_size(c[0], c[1], c[2], h, w);
    EXPECT_EQ(std::make_tuple(h, w), std::make_tuple(c[3], c[4]))
        << "image " << c[0] << " x " << c[1] << ", limit " << c[2];
  }
}

TEST(DetSize, NeverAboveTheLimit) {
  GLT_RNG(rng);
  for (int trial = 0; trial < 2000; ++trial) {
    const int ih = std::uniform_int_distribution<int>(1, 5000)(rng),
              iw = std::uniform_int_distribution<int>(1, 5000)(rng);
    const int limit = std::uniform_int_distribution<int>(32, 2000)(rng);
    int h = 0, w = 0;
    ocr::det_size(ih, iw, limit, h, w);
    SCOPED_TRACE(std::to_string(ih) + " x " + std::to_string(iw) + ", limit " + std::to_string(limit));
    ASSERT_EQ(h % 32, 0);
    ASSERT_EQ(w % 32, 0);
    // Each side is within half a step (16) of the scaled side, and at least 32.
    const double ratio = std::max(ih, iw) > limit ? static_cast<double>(limit) / std::max(ih, iw) : 1.0;
    EXPECT_LE(h, std::max(32.0, std::floor(ih * ratio) + 16));
    EXPECT_LE(w, std::max(32.0, std::floor(iw * ratio) + 16));
    EXPECT_GE(h, std::floor(ih * ratio) - 16);
    EXPECT_GE(w, std::floor(iw * ratio) - 16);
    EXPECT_LE(std::max(h, w), std::max(32, (limit + 16) / 32 * 32));
  }
}

TEST(DetSize, BadInputThrows) {
  int h = 0, w = 0;
  EXPECT_THROW(ocr::det_size(0, 10, 960, h, w), std::invalid_argument);
  EXPECT_THROW(ocr::det_size(10, 10, 0, h, w), std::invalid_argument);
}

// call_cost: the cut of the sorted lines into batches is the cheapest one. Reference: every cut of
// the reference order (2^(n-1) of them for n lines) priced by exact integer arithmetic.
TEST(RecBatches, CallCostCutIsTheCheapest) {
  GLT_RNG(rng);
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t n = std::uniform_int_distribution<std::size_t>(0, 12)(rng);
    const std::vector<cv::Size> crops = random_crops(rng, n, 6, 400);
    ocr::RecBatchOptions o;
    o.batch = std::vector<int>{0, 1, 3, 6}[trial % 4];
    o.align = trial % 3 ? 32 : 1;
    o.call_cost = std::vector<int>{1, 200, 1000, 5000, 100000}[trial % 5];
    SCOPED_TRACE("trial " + std::to_string(trial) + ": " + std::to_string(n) + " lines, batch " +
                 std::to_string(o.batch) + ", align " + std::to_string(o.align) + ", call cost " +
                 std::to_string(o.call_cost));
    const std::vector<std::size_t> order = paddle_order(crops);
    const std::size_t per = o.batch > 0 ? static_cast<std::size_t>(o.batch) : std::max<std::size_t>(n, 1);
    auto price = [&](const std::vector<std::vector<std::size_t>>& batches) {
      std::int64_t c = 0;
      for (const auto& b : batches)
        c += o.call_cost +
             static_cast<std::int64_t>(b.size()) * reference_width(crops, b, o.height, o.min_width, o.align);
      return c;
    };
    std::int64_t best = std::numeric_limits<std::int64_t>::max();
    for (std::uint32_t mask = 0; n > 0 && mask < (1u << (n - 1)); ++mask) {  // bit i: a cut after line i
      std::vector<std::vector<std::size_t>> batches(1);
      for (std::size_t i = 0; i < n; ++i) {
        batches.back().push_back(order[i]);
        if (i + 1 < n && (mask >> i & 1u)) batches.emplace_back();
      }
      if (std::all_of(batches.begin(), batches.end(), [&](const auto& b) { return b.size() <= per; }))
        best = std::min(best, price(batches));
    }
    const auto got = ocr::rec_batches(crops, o);
    std::vector<std::size_t> lines;
    std::vector<std::vector<std::size_t>> got_lines;
    for (std::size_t k = 0; k < got.size(); ++k) {
      const auto& b = got[k];
      ASSERT_FALSE(b.lines.empty()) << "batch " << k;
      EXPECT_LE(b.lines.size(), per) << "batch " << k;
      EXPECT_EQ(b.width, reference_width(crops, b.lines, o.height, o.min_width, o.align)) << "batch " << k;
      lines.insert(lines.end(), b.lines.begin(), b.lines.end());
      got_lines.push_back(b.lines);
    }
    EXPECT_EQ(lines, order) << "batches hold the sorted lines, each once, in order";
    if (n > 0) {
      EXPECT_EQ(price(got_lines), best);
    }
  }
}

// The page's 25 lines (their crop sizes as the detector finds them on the 960 x 960 page of
// gltensor_ocr_bench): PaddleOCR's batches of six run 22496 columns in 5 calls; a call cost of
// 500 columns cuts them into 5 calls of 21632 columns, of 100000 into one call of all lines.
TEST(RecBatches, CallCostOnThePage) {
  const std::vector<cv::Size> page = {{600, 27}, {659, 24}, {52, 23},  {567, 24}, {416, 21}, {598, 23}, {128, 21},
                                      {485, 23}, {349, 24}, {480, 24}, {121, 21}, {842, 31}, {428, 24}, {283, 20},
                                      {108, 24}, {447, 24}, {440, 24}, {351, 23}, {29, 21},  {577, 27}, {373, 24},
                                      {682, 24}, {44, 33},  {427, 27}, {412, 24}};
  auto columns = [](const std::vector<ocr::RecBatch>& bs) {
    std::int64_t c = 0;
    for (const auto& b : bs) c += static_cast<std::int64_t>(b.lines.size()) * b.width;
    return c;
  };
  ocr::RecBatchOptions o;
  const auto paddle = ocr::rec_batches(page, o);
  EXPECT_EQ(paddle.size(), 5u);
  EXPECT_EQ(columns(paddle), 22496);
  o.call_cost = 500;
  const auto cut = ocr::rec_batches(page, o);
  EXPECT_EQ(cut.size(), 5u);
  EXPECT_EQ(columns(cut), 21632);
  o.batch = 0;
  o.call_cost = 100000;
  const auto one = ocr::rec_batches(page, o);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].lines.size(), page.size());
  EXPECT_EQ(columns(one), 25 * 1376);
}

namespace {

// Every corner and score equal, bit for bit, in the same order.
void expect_same_boxes(const std::vector<ocr::DetBox>& got, const std::vector<ocr::DetBox>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    for (std::size_t k = 0; k < 4; ++k) {
      EXPECT_EQ(got[i].box[k].x, want[i].box[k].x) << "box " << i << " corner " << k;
      EXPECT_EQ(got[i].box[k].y, want[i].box[k].y) << "box " << i << " corner " << k;
    }
    EXPECT_EQ(got[i].score, want[i].score) << "box " << i;
  }
}

}  // namespace

// db_boxes (a per-thread bitmap, contours on the set pixels' bounding rectangle, reused masks)
// returns the reference's boxes and scores bit for bit: random maps, edge shapes (1 row or column,
// bars past the edges), an empty and a full map, thresholds that keep many boxes.
TEST(DbBoxes, MatchesTheWholeMapReference) {
  GLT_RNG(rng);
  const std::vector<std::pair<int, int>> shapes{{640, 640}, {96, 320}, {32, 32},  {1, 64},  {64, 1},
                                                {1, 1},     {37, 250}, {250, 37}, {160, 96}};
  std::size_t total = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const auto [h, w] = shapes[static_cast<std::size_t>(trial) % shapes.size()];
    const int lines = std::uniform_int_distribution<int>(0, 30)(rng);
    std::vector<float> prob = random_det_map(rng, h, w, lines, trial % 2 ? 0.5f : 0.65f);
    if (trial == 7) std::fill(prob.begin(), prob.end(), 0.0f);
    if (trial == 8) std::fill(prob.begin(), prob.end(), 0.8f);
    ocr::DbOptions o;
    o.box_threshold = trial % 3 ? 0.6f : 0.3f;
    o.max_candidates = trial % 5 ? 1000 : 7;
    const int img_h = 3 * h + trial, img_w = 2 * w + 1;
    SCOPED_TRACE("trial " + std::to_string(trial) + ": " + std::to_string(h) + " x " + std::to_string(w) + ", " +
                 std::to_string(lines) + " bars");
    const auto want = reference_db_boxes(prob, h, w, img_h, img_w, o);
    const auto got = ocr::db_boxes(prob, h, w, img_h, img_w, o);
    expect_same_boxes(got, want);
    total += got.size();
  }
  // The maps do make boxes: 79 to 151 over seeds 1 to 300, median 116 (a bound of 100 failed
  // one seed in 20 runs, 17956715268930014570: 99).
  EXPECT_GT(total, 40u);
}

// The set pixels' bounding rectangle (db_boxes traces the contours on it only): a bar alone in each eighth
// of the rows, the first and the last included, reaching further left and right than the others, bounds
// the contours as on the whole map (c29737f thresholded the map in 8 row strips, each with its own extent).
TEST(DbBoxes, EachRowStripBoundsTheContours) {
  GLT_RNG(rng);
  std::uniform_real_distribution<float> u(0, 1);
  for (auto [h, w] : std::vector<std::pair<int, int>>{{640, 640}, {96, 320}, {37, 250}, {9, 40}, {3, 60}}) {
    const int strips = std::min(8, h);
    for (int s = 0; s < strips; ++s) {
      std::vector<float> prob = glt_test::uniform(rng, static_cast<std::size_t>(h) * w, 0.0f, 0.29f);
      const int y0 = h * s / strips, y1 = h * (s + 1) / strips;  // the strip's rows
      // The wide bar: the strip's rows (at most 6), columns 1 to w - 2; a narrow bar in the middle of
      // another strip's rows.
      for (int y = y0; y < std::min(y1, y0 + 6); ++y)
        for (int x = 1; x < w - 1; ++x) prob[static_cast<std::size_t>(y) * w + x] = 0.7f + 0.2f * u(rng);
      const int t = (s + strips / 2) % strips, ty = h * t / strips;
      if (t != s)
        for (int y = ty; y < std::min(h, ty + 4); ++y)
          for (int x = w / 3; x < 2 * w / 3; ++x) prob[static_cast<std::size_t>(y) * w + x] = 0.8f + 0.1f * u(rng);
      ocr::DbOptions o;
      o.box_threshold = 0.3f;
      SCOPED_TRACE(std::to_string(h) + " x " + std::to_string(w) + ", strip " + std::to_string(s));
      const auto want = reference_db_boxes(prob, h, w, 2 * h, 2 * w, o);
      const auto got = ocr::db_boxes(prob, h, w, 2 * h, 2 * w, o);
      expect_same_boxes(got, want);
    }
  }
}

TEST(DbBoxes, BadMapThrows) {
  const std::vector<float> prob(12, 0.5f);
  EXPECT_THROW(ocr::db_boxes(prob, 3, 5, 30, 50), std::invalid_argument);
  EXPECT_THROW(ocr::db_boxes(prob, 0, 12, 30, 50), std::invalid_argument);
  EXPECT_NO_THROW(ocr::db_boxes(prob, 3, 4, 30, 50));
}

// db_boxes' scratch buffers are per thread: four threads at once, each on maps of its own sizes
// (the buffers grown and shrunk between calls), return the reference's boxes bit for bit.
// Sabotage: the buffers static instead of thread_local (mismatches or a crash).
TEST(DbBoxes, ThreadsKeepTheirOwnBuffers) {
  GLT_RNG(rng);
  struct Map {
    int h, w;
    std::vector<float> prob;
    std::vector<ocr::DetBox> want;
  };
  const std::vector<std::pair<int, int>> shapes{{640, 640}, {32, 320}, {160, 96}, {96, 160}};
  std::vector<std::vector<Map>> maps(4);
  for (std::size_t t = 0; t < maps.size(); ++t)
    for (int k = 0; k < 6; ++k) {
      const auto [h, w] = shapes[(t + static_cast<std::size_t>(k)) % shapes.size()];
      Map m{h, w, random_det_map(rng, h, w, 20, 0.65f), {}};
      m.want = reference_db_boxes(m.prob, h, w, 2 * h, 2 * w, ocr::DbOptions{});
      maps[t].push_back(std::move(m));
    }
  std::vector<int> mismatches(maps.size(), 0);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < maps.size(); ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < 5; ++r)
        for (const Map& m : maps[t]) {
          const auto got = ocr::db_boxes(m.prob, m.h, m.w, 2 * m.h, 2 * m.w);
          bool same = got.size() == m.want.size();
          for (std::size_t i = 0; same && i < got.size(); ++i) {
            same = got[i].score == m.want[i].score;
            for (std::size_t k = 0; k < 4; ++k)
              same = same && got[i].box[k].x == m.want[i].box[k].x && got[i].box[k].y == m.want[i].box[k].y;
          }
          mismatches[t] += same ? 0 : 1;
        }
    });
  for (auto& th : threads) th.join();
  std::size_t boxes = 0;
  for (const auto& ms : maps)
    for (const Map& m : ms) boxes += m.want.size();
  EXPECT_GT(boxes, 24u);  // the maps do make boxes
  EXPECT_EQ(mismatches, std::vector<int>(maps.size(), 0));
}
