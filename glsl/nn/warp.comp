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
// Loops: none (the channel loop has a constant trip count).
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

void main() {
  uint i = GLOBAL_ID_1D;
  if (i >= u_count) return;
  uint plane = u_OH * u_OW;
  uint n = i / plane;
  uint p = i - n * plane;
  uint y = p / u_OW;
  uint x = p - y * u_OW;
  uint out_base = n * uint(CHANNELS) * plane + p;
  uint row = n * 10u;
  if (float(x) >= float(load2(row + 9u))) {
    for (uint c = 0u; c < uint(CHANNELS); ++c) store0(out_base + c * plane, CT0(u_pad));
    return;
  }
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
  for (uint c = 0u; c < uint(CHANNELS); ++c) {
#ifdef REVERSE
    uint src = uint(CHANNELS) - 1u - c;
#else
    uint src = c;
#endif
    // a * (1 - t) + b * t, spelt out (mix() may be computed as a + (b - a) * t, whose NaN for
    // infinities differs).
    float top = pixel(ya, xa, src) * (1.0 - au) + pixel(ya, xb, src) * au;
    float bottom = pixel(yb, xa, src) * (1.0 - au) + pixel(yb, xb, src) * au;
    float value = top * (1.0 - av) + bottom * av;
    store0(out_base + c * plane, CT0((value * u_scale - u_mean[c]) / u_std[c]));
  }
}
