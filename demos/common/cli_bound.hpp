// CLI11 checks shared by the demos.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

namespace demo {

/// CLI11 2.1's PositiveNumber / NonNegativeNumber print their bound as a 309-digit double
/// ("not in range 0.000000 to 1797...") ; this names the bound as written: "--limit: must be >= 0, got -5".
inline CLI::Validator bound(double lo, bool inclusive) {
  char b[64];
  std::snprintf(b, sizeof b, "%g", lo);
  const std::string rule = (inclusive ? ">= " : "> ") + std::string(b);
  return CLI::Validator(
      [lo, inclusive, rule](std::string& s) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(s, v)) return "'" + s + "' is not a number";
        return (inclusive ? v >= lo : v > lo) ? std::string() : "must be " + rule + ", got " + s;
      },
      (lo == 0 && inclusive)                ? "NONNEGATIVE"
      : (lo == 0 || (lo == 1 && inclusive)) ? "POSITIVE"
                                            : rule);
}

}  // namespace demo
