#include "labs/report_format.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace dtl {

namespace {

// "%.Ng" with a short exponent: 1.676e-07 -> 1.676e-7, 2e+09 -> 2e9.
std::string significant(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  std::string s = buf;
  const auto e = s.find('e');
  if (e == std::string::npos) return s;
  std::string mantissa = s.substr(0, e), exponent = s.substr(e + 1);
  const bool negative = exponent[0] == '-';
  exponent.erase(0, exponent.find_first_not_of("+-0"));
  return mantissa + "e" + (negative ? "-" : "") + (exponent.empty() ? "0" : exponent);
}

// A bound of a range: whole from 100 up (no exponent), else 3 significant digits.
std::string range_bound(double v) {
  if (std::fabs(v) >= 100 && std::fabs(v) < 1e7) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  return significant(v, 3);
}

}  // namespace

DisplayUnit display_unit(double v, std::string_view unit) {
  const double a = std::fabs(v);
  if (unit == "B") {
    if (a < 1024) return {1, " B"};
    if (a < 1024.0 * 1024) return {1024, " KiB"};
    if (a < 1024.0 * 1024 * 1024) return {1024.0 * 1024, " MiB"};
    if (a < 1024.0 * 1024 * 1024 * 1024) return {1024.0 * 1024 * 1024, " GiB"};
    return {1024.0 * 1024 * 1024 * 1024, " TiB"};
  }
  if (unit == "s") {
    if (a == 0 || a >= 1) return {1, " s"};
    if (a >= 1e-3) return {1e-3, " ms"};
    if (a >= 1e-6) return {1e-6, " µs"};
    return {1e-9, " ns"};
  }
  if (unit == "B/s") return a >= 1e8 || a == 0 ? DisplayUnit{1e9, " GB/s"} : DisplayUnit{1e6, " MB/s"};
  if (unit == "x") return {1, "×"};
  if (unit.empty()) return {1, ""};
  DisplayUnit d{1, " "};
  d.suffix.append(unit);  // (not " " + std::string: GCC 12 warns falsely of an overlapping memcpy)
  return d;
}

std::string format_number(double v) {
  if (v == 0) return "0";
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  if (v == std::floor(v) && std::fabs(v) < 1e7) return significant(v, 7);
  if (std::fabs(v) >= 1e-3) return significant(v, 4);
  // Small: always an exponent (1e-4, not 0.0001), its mantissa without trailing zeros.
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3e", v);
  std::string s = buf;
  const auto e = s.find('e');
  std::string mantissa = s.substr(0, e);
  mantissa.erase(mantissa.find_last_not_of('0') + 1);
  if (mantissa.back() == '.') mantissa.pop_back();
  std::string exponent = s.substr(e + 1);
  const bool negative = exponent[0] == '-';
  exponent.erase(0, exponent.find_first_not_of("+-0"));
  return mantissa + "e" + (negative ? "-" : "") + exponent;
}

std::string format_value(double v, std::string_view unit) {
  const DisplayUnit d = display_unit(v, unit);
  if (unit == "x") return significant(v, 3) + d.suffix;
  return format_number(v / d.divisor) + d.suffix;
}

std::string format_with_range(double median, double min, double max, std::string_view unit) {
  const DisplayUnit d = display_unit(median, unit);
  return format_value(median, unit) + " (" + range_bound(min / d.divisor) + "–" + range_bound(max / d.divisor) + ")";
}

std::string format_expected(double expected, double tolerance, std::string_view unit) {
  if (tolerance == 0) return format_value(expected, unit);
  if (expected == 0) return "≤ " + format_value(tolerance, unit);
  const double relative = tolerance / std::fabs(expected);
  if (relative >= 0.01) return format_value(expected, unit) + " ±" + significant(100 * relative, 2) + "%";
  return format_value(expected, unit) + " ±" + format_value(tolerance, unit);
}

std::size_t display_width(std::string_view s) {
  std::size_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;  // not a continuation byte
  return n;
}

std::vector<std::string> wrap(const std::string& text, std::size_t width) {
  std::vector<std::string> lines;
  std::string line;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t space = text.find(' ', at);
    std::string word = text.substr(at, space == std::string::npos ? std::string::npos : space - at);
    at = space == std::string::npos ? text.size() : space + 1;
    while (display_width(word) > width && width > 0) {  // a word longer than a line: cut it
      if (!line.empty()) lines.push_back(std::move(line));
      line.clear();
      std::size_t cut = 0, cols = 0, after_mark = 0;  // after_mark: just after the last ( , / _ within the line
      while (cut < word.size() && (cols < width || (static_cast<unsigned char>(word[cut]) & 0xC0) == 0x80)) {
        const char ch = word[cut];
        cols += (static_cast<unsigned char>(word[cut++]) & 0xC0) != 0x80;
        if (ch == '(' || ch == ',' || ch == '/' || ch == '_') after_mark = cut;
      }
      if (after_mark > 0 && after_mark < cut) cut = after_mark;  // "all_gather(" / "reduce_scatter(x))"
      lines.push_back(word.substr(0, cut));
      word.erase(0, cut);
    }
    if (word.empty()) continue;
    if (!line.empty() && display_width(line) + 1 + display_width(word) > width) {
      lines.push_back(std::move(line));
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty() || lines.empty()) lines.push_back(line);
  return lines;
}

std::string wrap_hanging(const std::string& text, std::size_t width) {
  std::string out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const std::size_t indent = line.find_first_not_of(' ');
    if (indent == std::string::npos || display_width(line) <= width) {
      out += line + "\n";
      continue;
    }
    const std::size_t room = width > indent + 4 + 20 ? width - indent - 4 : 20;
    const std::vector<std::string> lines = wrap(line.substr(indent), room);
    for (std::size_t i = 0; i < lines.size(); ++i)
      out += std::string(i == 0 ? indent : indent + 4, ' ') + lines[i] + "\n";
  }
  return out;
}

std::string pad(const std::string& s, std::size_t width, bool right_align) {
  const std::size_t w = display_width(s);
  if (w >= width) return s;
  return right_align ? std::string(width - w, ' ') + s : s + std::string(width - w, ' ');
}

std::string count_of(long long n, const std::string& singular, const std::string& plural) {
  return std::to_string(n) + " " + (n == 1 ? singular : plural.empty() ? singular + "s" : plural);
}

int terminal_width() {
  int columns = 0;
  winsize size{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0) columns = size.ws_col;
  if (columns <= 0) {
    const char* env = std::getenv("COLUMNS");
    columns = env ? std::atoi(env) : 0;
  }
  if (columns <= 0) columns = 100;
  return std::clamp(columns, 60, 200);
}

}  // namespace dtl
