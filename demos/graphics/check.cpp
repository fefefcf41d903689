// graphics_demo_check INPUT.png SCREENSHOT.png: compares the demo's window (screenshot) with the
// CPU reference of its filter (filter.hpp) applied to the scene it rendered (input), below the
// overlay band. Passes when every channel is within 2/255 of the reference, and the filter
// visibly changed the picture (so that an unfiltered or empty window cannot pass).
#include <stb/stb_image.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "filter.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: graphics_demo_check INPUT.png SCREENSHOT.png\n");
    return 2;
  }
  int w = 0, h = 0, n = 0, sw = 0, sh = 0;
  std::unique_ptr<unsigned char, void (*)(void*)> in(stbi_load(argv[1], &w, &h, &n, 4), stbi_image_free);
  std::unique_ptr<unsigned char, void (*)(void*)> shot(stbi_load(argv[2], &sw, &sh, &n, 4), stbi_image_free);
  if (!in || !shot) {
    std::fprintf(stderr, "cannot read %s or %s\n", argv[1], argv[2]);
    return 1;
  }
  if (w != sw || h != sh) {
    std::fprintf(stderr, "sizes differ: %dx%d vs %dx%d\n", w, h, sw, sh);
    return 1;
  }
  const auto ref = graphics_demo::reference(in.get(), w, h);
  int max_diff = 0, changed = 0;
  long checked = 0, off_by_two = 0;
  for (int y = graphics_demo::kOverlayRows; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) {
        const std::size_t i = static_cast<std::size_t>(y * w + x);
        const int want = static_cast<int>(ref[static_cast<std::size_t>(c)][i] * 255.0 + 0.5);
        const int got = shot.get()[i * 4 + static_cast<std::size_t>(c)];
        const int d = std::abs(got - want);
        if (d > max_diff) max_diff = d;
        off_by_two += d == 2;
        changed += std::abs(got - in.get()[i * 4 + static_cast<std::size_t>(c)]) > 8;
        ++checked;
      }
  std::printf("%dx%d: %ld channel values checked, max difference %d/255 (%ld at 2), %d changed by the filter\n", w, h,
              checked, max_diff, off_by_two, changed);
  if (max_diff > 2) {
    std::printf("FAILED: the window differs from the filter's CPU reference\n");
    return 1;
  }
  if (changed < checked / 20) {
    std::printf("FAILED: the window looks unfiltered\n");
    return 1;
  }
  std::printf("screenshot matches the CPU reference\n");
  return 0;
}
