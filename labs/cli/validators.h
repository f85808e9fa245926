// CLI11 validators for numbers: finite and in range. CLI11's own Range lets NaN through
// (every comparison with NaN is false), and a watchdog of `nan` seconds is no watchdog.
#pragma once

#include <cmath>
#include <string>

#include <CLI/CLI.hpp>

namespace dtl::cli {

inline std::string plain_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// A finite number in [lo, hi].
inline CLI::Validator finite_range(double lo, double hi) {
  const std::string range = "a number from " + plain_number(lo) + " to " + plain_number(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& text) {
        double v = 0;
        if (!CLI::detail::lexical_cast(text, v) || !std::isfinite(v) || v < lo || v > hi)
          return "'" + text + "' is not " + range;
        return std::string();
      },
      "NUMBER in [" + plain_number(lo) + ", " + plain_number(hi) + "]");
}

// A whole number in [lo, hi] (for int options; CLI11 has already rejected non-integers).
inline CLI::Validator whole_range(long long lo, long long hi) {
  const std::string range = "a whole number from " + std::to_string(lo) + " to " + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& text) {
        long long v = 0;
        if (!CLI::detail::lexical_cast(text, v) || v < lo || v > hi) return "'" + text + "' is not " + range;
        return std::string();
      },
      "INT in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

}  // namespace dtl::cli
