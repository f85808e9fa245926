// CLI11 validators for numbers and sizes: finite and in range (dtlab's and dtlab-viz's). CLI11's own Range lets NaN
// through (every comparison with NaN is false), and a watchdog of `nan` seconds is no watchdog.
#pragma once

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/util/units.h"

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

// A size (4096, 64K, 1.5M, 2G: powers of 1024) from lo to hi bytes.
inline CLI::Validator size_range(std::uint64_t lo, std::uint64_t hi) {
  const std::string range = "a size from " + format_size(lo) + " to " + format_size(hi) + " (K/M/G = 1024-based)";
  return CLI::Validator(
      [lo, hi, range](std::string& text) {
        try {
          const std::uint64_t v = parse_size(text, "the size");
          if (v >= lo && v <= hi) return std::string();
        } catch (const Error&) {}
        return "'" + text + "' is not " + range;
      },
      "SIZE in [" + format_size(lo) + ", " + format_size(hi) + "]");
}

// One of the named values of an enum option (--schedule zb-v, --framework fsdp): the name becomes
// the value's number for CLI11 to read; any other text is refused listing the names in their order
// (CLI11's CheckedTransformer prints its internal map, with an 8-bit enum's value as a raw byte).
template <class Range>
CLI::Validator named_choice(const Range& names) {
  std::vector<std::pair<std::string, long long>> known;
  std::string list;
  for (const auto& [name, value] : names) {
    known.emplace_back(name, static_cast<long long>(value));
    list += (list.empty() ? "" : ", ") + std::string(name);
  }
  return CLI::Validator(
      [known, list](std::string& text) {
        for (const auto& [name, value] : known)
          if (text == name) {
            text = std::to_string(value);
            return std::string();
          }
        return "'" + text + "' is not one of " + list;
      },
      list);
}

// An option given as "" (--trace "", --save "", plan --model ""): never a silent "none" or
// a default; exit 2 naming it, in every command (its subcommands included).
inline void require_no_empty_values(const CLI::App& app) {
  for (const CLI::Option* o : app.get_options()) {
    if (o->count() == 0 || o->get_expected_min() == 0) continue;  // not given, or a flag
    for (const std::string& v : o->results())
      if (v.empty())
        throw UsageError(o->get_name() + " was given an empty value; give one, or leave " + o->get_name() + " out");
  }
  for (const CLI::App* sub : app.get_subcommands()) require_no_empty_values(*sub);
}

}  // namespace dtl::cli
