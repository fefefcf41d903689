#include "plot_common.hpp"

#include <errno.h>  // program_invocation_short_name (glibc)

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace demo {
namespace {

// PLplot ends the process on a fatal error (plexit); this names the program before it does.
// The usual causes (missing driver, unwritable file) are checked before PLplot is called.
int on_plplot_exit(PLCHAR_VECTOR msg) {
  std::fprintf(stderr, "\n%s: error: PLplot: %s\n", program_invocation_short_name, msg);
  return 2;
}

}  // namespace

void check_png_driver() {
  // plgDevs fills caller-owned arrays (capacity in n) with the drivers PLplot can load.
  std::vector<const char*> m(128), d(128);
  const char** menus = m.data();
  const char** names = d.data();
  int n = static_cast<int>(m.size());
  plgDevs(&menus, &names, &n);
  for (int i = 0; i < n; ++i)
    if (std::string(d[static_cast<std::size_t>(i)]) == "pngcairo") return;
  throw std::runtime_error(
      "PLplot's PNG driver 'pngcairo' is not installed (Debian package plplot-driver-cairo; "
      "bash .ci/install-deps installs it)");
}

std::unique_ptr<plstream> open_png(const std::string& path, int w, int h) {
  check_png_driver();
  if (!std::ofstream(path, std::ios::binary)) throw std::runtime_error("cannot write " + path);
  ::plsexit(on_plplot_exit);
  auto pls = std::make_unique<plstream>();
  pls->sdev("pngcairo");
  pls->sfnam(path.c_str());
  pls->spage(0, 0, w, h, 0, 0);
  const PLINT r[] = {255, 30, 225, 31, 158, 214, 255}, g[] = {255, 30, 225, 119, 202, 39, 255},
              b[] = {255, 30, 225, 180, 225, 40, 255};
  pls->scmap0(r, g, b, 7);
  pls->init();
  pls->adv(0);
  return pls;
}

void finish(std::unique_ptr<plstream> pls, const std::string& path) {
  pls.reset();  // plend1: the cairo driver writes the PNG
  std::error_code ec;
  if (std::filesystem::file_size(path, ec) == 0 || ec) throw std::runtime_error("PLplot wrote no image to " + path);
}

void axes(plstream& p, PLFLT xtick) {
  p.col0(kGrid);
  p.width(1);
  p.box("g", xtick, 0, "g", 0, 0);
  p.col0(kInk);
  p.box("bcnst", xtick, 0, "bcnstv", 0, 0);
}

void page_title(plstream& p, const std::string& title) {
  p.vpor(0, 1, 0, 1);
  p.wind(0, 1, 0, 1);
  p.col0(kInk);
  double y = 0.955;
  std::size_t from = 0;
  for (int line = 0; from <= title.size(); ++line) {
    const std::size_t to = std::min(title.find('\n', from), title.size());
    p.schr(0, line == 0 ? 1.15 : 0.9);
    p.ptex(0.5, y, 1, 0, 0.5, title.substr(from, to - from).c_str());
    y -= line == 0 ? 0.045 : 0.04;
    from = to + 1;
  }
  p.schr(0, 1.0);
}

}  // namespace demo
