// Perspective warps of an image with bilinear sampling, normalized into planes
// (src/nn/warp.cpp; include/gltensor/image.hpp, warp_perspective). The image is [H, W, CHANNELS]
// (HWC, operand 1: uint8 or float32); the output [N, CHANNELS, OH, OW] (operand 0) holds one
// warped picture per row of the warps table (operand 2: float32 [N, 10], a row-major 3x3
// homography and the number of columns sampled).
//
// Output pixel (x, y) of picture n maps to image point (u, v) = (m0 x + m1 y + m2, m3 x + m4 y +
// m5) / (m6 x + m7 y + m8) (pixel centres at integers: OpenCV's warpPerspective with the inverse
// map, and cv::resize's half-pixel rule when the homography is resize_warp's). The value there is
// bilinear between the four pixels around it, with indices clamped to the image (BORDER_REPLICATE;
// cv::resize's INTER_LINEAR border), so points outside take the edge's values. Channel c of the
// output reads channel CHANNELS - 1 - c with REVERSE (RGB -> BGR), and is
// (value * u_scale - u_mean[c]) / u_std[c]; columns x >= the row's width hold u_pad.
// One invocation per output pixel (all channels): N * OH * OW.
// Loops: none (the channel and tap loops have constant trip counts).
// CROP: OpenCV's two steps of a text line's input in one (PaddleOCR's get_rotate_crop_image and
// resize_norm_img): a crop of u_crop = (w, h) pixels whose pixel (i, j) is the image's bicubic
// sample (Keys, a = -0.75, as INTER_CUBIC; indices clamped) at the homography's point, resized
// bilinearly to the row's width x OH (cv::resize, INTER_LINEAR; crop indices clamped). Its table
// rows hold 16 values: the 3x3 homography (crop pixel -> image point), the width, the crop's w
// and h, and the resize's x scale, x offset, y scale, y offset (crop point = output pixel *
// scale + offset). With BYTES (uint8 images) the arithmetic is OpenCV's 8-bit one: sample
// positions rounded to 1/32 pixel, resize weights to 1/2048, the crop's and the resize's values
// rounded to bytes.
layout(local_size_x = LOCAL_X) in;

uniform uint u_count;  // N * OH * OW
uniform uint u_OH;
uniform uint u_OW;
uniform uint u_H;
uniform uint u_W;
uniform float u_scale;
uniform float u_mean[4];
uniform float u_std[4];
uniform float u_pad;

float pixel(uint y, uint x, uint c) { return float(load1((y * u_W + x) * uint(CHANNELS) + c)); }

// a * (1 - t) + b * t, and exactly a where t = 0: b is then not read into the value (a NaN or
// infinity there stays out; compilers may evaluate the sum as a + (b - a) * t otherwise).
float lerp(float a, float b, float t) { return t == 0.0 ? a : a * (1.0 - t) + b * t; }

#ifdef CROP
#define ROW_SIZE 16u
// Keys' cubic weights (a = -0.75) of the taps at -1, 0, 1, 2 from a fraction t in [0, 1).
vec4 cubic_weights(float t) {
  const float A = -0.75;
  float c0 = ((A * (t + 1.0) - 5.0 * A) * (t + 1.0) + 8.0 * A) * (t + 1.0) - 4.0 * A;
  float c1 = ((A + 2.0) * t - (A + 3.0)) * t * t + 1.0;
  float c2 = ((A + 2.0) * (1.0 - t) - (A + 3.0)) * (1.0 - t) * (1.0 - t) + 1.0;
  return vec4(c0, c1, c2, 1.0 - c0 - c1 - c2);
}

// Crop pixel (i, j) of picture row `row`: every channel's bicubic sample of the image.
void crop_pixel(uint row, float i, float j, out float v[CHANNELS]) {
  float w = float(load2(row + 6u)) * i + float(load2(row + 7u)) * j + float(load2(row + 8u));
  float u = (float(load2(row)) * i + float(load2(row + 1u)) * j + float(load2(row + 2u))) / w;
  float t = (float(load2(row + 3u)) * i + float(load2(row + 4u)) * j + float(load2(row + 5u))) / w;
  u = clamp(u, -4.0, float(u_W) + 4.0);
  t = clamp(t, -4.0, float(u_H) + 4.0);
  if (isnan(u)) u = 0.0;
  if (isnan(t)) t = 0.0;
#ifdef BYTES
  u = floor(u * 32.0 + 0.5) / 32.0;
  t = floor(t * 32.0 + 0.5) / 32.0;
#endif
  float u0 = floor(u), t0 = floor(t);
  vec4 wx = cubic_weights(u - u0), wy = cubic_weights(t - t0);
  int iu = int(u0), it = int(t0);
  for (int c = 0; c < CHANNELS; ++c) v[c] = 0.0;
  for (int b = 0; b < 4; ++b) {
    uint y = uint(clamp(it - 1 + b, 0, int(u_H) - 1));
    for (int a = 0; a < 4; ++a) {
      uint x = uint(clamp(iu - 1 + a, 0, int(u_W) - 1));
      float k = wx[a] * wy[b];
      for (int c = 0; c < CHANNELS; ++c) v[c] += k * pixel(y, x, uint(c));
    }
  }
#ifdef BYTES
  for (int c = 0; c < CHANNELS; ++c) v[c] = clamp(floor(v[c] + 0.5), 0.0, 255.0);
#endif
}
#else
#define ROW_SIZE 10u
#endif

void main() {
  uint i = GLOBAL_ID_1D;
  if (i >= u_count) return;
  uint plane = u_OH * u_OW;
  uint n = i / plane;
  uint p = i - n * plane;
  uint y = p / u_OW;
  uint x = p - y * u_OW;
  uint out_base = n * uint(CHANNELS) * plane + p;
  uint row = n * ROW_SIZE;
  if (float(x) >= float(load2(row + 9u))) {
    for (uint c = 0u; c < uint(CHANNELS); ++c) store0(out_base + c * plane, CT0(u_pad));
    return;
  }
#ifdef CROP
  // The resize's source point in the crop, its two columns and rows (clamped) and weights.
  float cw = float(load2(row + 10u)), ch = float(load2(row + 11u));
  float cx = float(x) * float(load2(row + 12u)) + float(load2(row + 13u));
  float cy = float(y) * float(load2(row + 14u)) + float(load2(row + 15u));
  float x0 = floor(cx), y0 = floor(cy);
  float au = cx - x0, av = cy - y0;
#ifdef BYTES
  au = floor(au * 2048.0 + 0.5) / 2048.0;
  av = floor(av * 2048.0 + 0.5) / 2048.0;
#endif
  float xa = clamp(x0, 0.0, cw - 1.0), xb = clamp(x0 + 1.0, 0.0, cw - 1.0);
  float ya = clamp(y0, 0.0, ch - 1.0), yb = clamp(y0 + 1.0, 0.0, ch - 1.0);
  float p00[CHANNELS], p01[CHANNELS], p10[CHANNELS], p11[CHANNELS];
  crop_pixel(row, xa, ya, p00);
  crop_pixel(row, xb, ya, p01);
  crop_pixel(row, xa, yb, p10);
  crop_pixel(row, xb, yb, p11);
#else
  float fx = float(x), fy = float(y);
  float w = float(load2(row + 6u)) * fx + float(load2(row + 7u)) * fy + float(load2(row + 8u));
  float u = (float(load2(row)) * fx + float(load2(row + 1u)) * fy + float(load2(row + 2u))) / w;
  float v = (float(load2(row + 3u)) * fx + float(load2(row + 4u)) * fy + float(load2(row + 5u))) / w;
  // Clamped before the cast: far points (or a NaN / infinite map) stay inside int's range.
  u = clamp(u, -1.0, float(u_W));
  v = clamp(v, -1.0, float(u_H));
  if (isnan(u)) u = 0.0;
  if (isnan(v)) v = 0.0;
  float u0 = floor(u), v0 = floor(v);
  float au = u - u0, av = v - v0;
  int iu = int(u0), iv = int(v0);
  uint xa = uint(clamp(iu, 0, int(u_W) - 1)), xb = uint(clamp(iu + 1, 0, int(u_W) - 1));
  uint ya = uint(clamp(iv, 0, int(u_H) - 1)), yb = uint(clamp(iv + 1, 0, int(u_H) - 1));
#endif
  for (uint c = 0u; c < uint(CHANNELS); ++c) {
#ifdef REVERSE
    uint src = uint(CHANNELS) - 1u - c;
#else
    uint src = c;
#endif
#ifdef CROP
    float top = lerp(p00[src], p01[src], au);
    float bottom = lerp(p10[src], p11[src], au);
#else
    float top = lerp(pixel(ya, xa, src), pixel(ya, xb, src), au);
    float bottom = lerp(pixel(yb, xa, src), pixel(yb, xb, src), au);
#endif
    float value = lerp(top, bottom, av);
#if defined(CROP) && defined(BYTES)
    value = clamp(floor(value + 0.5), 0.0, 255.0);
#endif
    store0(out_base + c * plane, CT0((value * u_scale - u_mean[c]) / u_std[c]));
  }
}
