// Shared plotting helpers of the demos: PNG pages drawn with PLplot (Debian: libplplot-dev)
// through its cairo PNG driver "pngcairo" (Debian: plplot-driver-cairo).
#pragma once
#include <plplot/plstream.h>

#include <memory>
#include <string>

namespace demo {

/// Throws std::runtime_error naming the Debian package when PLplot's pngcairo driver is missing
/// (call it before training, so that a long run does not end without its plots).
void check_png_driver();

/// cmap0 indices of the pages open_png sets up (PLplot draws lines, text and fills in the
/// "current" cmap0 color).
enum Color : PLINT { kBackground = 0, kInk = 1, kGrid = 2, kBlue = 3, kLightBlue = 4, kRed = 5, kWhite = 6 };

/// One PNG page of w x h pixels, white background, written by finish(). PLplot's fatal errors
/// (which end the process) are reported as "<program>: error: PLplot: ..." first. Throws
/// std::runtime_error if the driver is missing or the file cannot be written.
std::unique_ptr<plstream> open_png(const std::string& path, int w, int h);
/// Ends the page (the driver writes the PNG); throws std::runtime_error if no image was written.
void finish(std::unique_ptr<plstream> pls, const std::string& path);
/// Light grid, then black axes with ticks and numeric labels (y labels upright).
void axes(plstream& p, PLFLT xtick);
/// Lines of `title` ('\n'-separated) centred at the top of the page, the first one larger.
void page_title(plstream& p, const std::string& title);

}  // namespace demo
