#include "image.hpp"

#include <stb/stb_image.h>
#include <stb/stb_image_write.h>
#include <stb/stb_truetype.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace ocr {

cv::Mat read_image(const std::string& path) {
  int w = 0, h = 0, n = 0;
  unsigned char* px = stbi_load(path.c_str(), &w, &h, &n, 3);
  if (!px) throw std::runtime_error(path + ": cannot read the image (" + std::string(stbi_failure_reason()) + ")");
  cv::Mat m(h, w, CV_8UC3);
  std::memcpy(m.data, px, static_cast<std::size_t>(w) * h * 3);
  stbi_image_free(px);
  return m;
}

void write_png(const std::string& path, const cv::Mat& rgb) {
  cv::Mat c = rgb.isContinuous() ? rgb : rgb.clone();
  if (!stbi_write_png(path.c_str(), c.cols, c.rows, 3, c.data, c.cols * 3))
    throw std::runtime_error(path + ": cannot write the PNG");
}

namespace {

// UTF-8 -> code points (invalid bytes map to U+FFFD).
std::vector<int> code_points(const std::string& s) {
  std::vector<int> r;
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    int cp = 0xFFFD, len = 1;
    if (c < 0x80)
      cp = c;
    else if ((c >> 5) == 6 && i + 1 < s.size())
      cp = ((c & 0x1F) << 6) | (s[i + 1] & 0x3F), len = 2;
    else if ((c >> 4) == 14 && i + 2 < s.size())
      cp = ((c & 0x0F) << 12) | ((s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F), len = 3;
    else if ((c >> 3) == 30 && i + 3 < s.size())
      cp = ((c & 0x07) << 18) | ((s[i + 1] & 0x3F) << 12) | ((s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F), len = 4;
    r.push_back(cp);
    i += static_cast<std::size_t>(len);
  }
  return r;
}

}  // namespace

struct Font::Info {
  stbtt_fontinfo info;
};

Font::Font(const std::string& path) : path_(path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(path + ": font not found (Debian package fonts-dejavu-core)");
  std::ostringstream ss;
  ss << f.rdbuf();
  data_ = std::make_shared<const std::string>(ss.str());
  info_ = std::make_shared<Info>();
  const auto* p = reinterpret_cast<const unsigned char*>(data_->data());
  if (!stbtt_InitFont(&info_->info, p, stbtt_GetFontOffsetForIndex(p, 0)))
    throw std::runtime_error(path + ": not a TrueType font");
}

int Font::width(const std::string& text, float px) const {
  const stbtt_fontinfo& info = info_->info;
  const float scale = stbtt_ScaleForPixelHeight(&info, px);
  float x = 0;
  const auto cps = code_points(text);
  for (std::size_t i = 0; i < cps.size(); ++i) {
    int adv = 0, lsb = 0;
    stbtt_GetCodepointHMetrics(&info, cps[i], &adv, &lsb);
    x += adv * scale;
    if (i + 1 < cps.size()) x += scale * stbtt_GetCodepointKernAdvance(&info, cps[i], cps[i + 1]);
  }
  return static_cast<int>(x + 0.5f);
}

int Font::draw(cv::Mat& rgb, const std::string& text, int x0, int y, float px, cv::Scalar color) const {
  const stbtt_fontinfo& info = info_->info;
  const float scale = stbtt_ScaleForPixelHeight(&info, px);
  float x = static_cast<float>(x0);
  const auto cps = code_points(text);
  for (std::size_t i = 0; i < cps.size(); ++i) {
    int adv = 0, lsb = 0;
    stbtt_GetCodepointHMetrics(&info, cps[i], &adv, &lsb);
    int w = 0, h = 0, xo = 0, yo = 0;
    const float shift = x - static_cast<float>(static_cast<int>(x));
    unsigned char* bmp = stbtt_GetCodepointBitmapSubpixel(&info, scale, scale, shift, 0, cps[i], &w, &h, &xo, &yo);
    for (int r = 0; r < h; ++r)
      for (int c = 0; c < w; ++c) {
        const int py = y + yo + r, pxl = static_cast<int>(x) + xo + c;
        if (py < 0 || py >= rgb.rows || pxl < 0 || pxl >= rgb.cols) continue;
        const float a = bmp[r * w + c] / 255.0f;
        auto& p = rgb.at<cv::Vec3b>(py, pxl);
        for (int k = 0; k < 3; ++k) p[k] = cv::saturate_cast<uchar>(p[k] * (1 - a) + color[k] * a);
      }
    stbtt_FreeBitmap(bmp, nullptr);
    x += adv * scale;
    if (i + 1 < cps.size()) x += scale * stbtt_GetCodepointKernAdvance(&info, cps[i], cps[i + 1]);
  }
  return static_cast<int>(x) - x0;
}

}  // namespace ocr
