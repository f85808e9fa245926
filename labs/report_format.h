// How a report's raw SI values read on a terminal: bytes in B/KiB/MiB/GiB (powers of
// 1024, as --bytes takes them), seconds in ns/µs/ms/s, bandwidth in GB/s (1e9, as
// nccl-tests), ratios as 2.09×, plain numbers with 4 significant digits and short
// exponents (1.7e-7). Plain functions, tested in tests/labs/report_test.cpp.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dtl {

// The unit a value is shown in: value / divisor, then the suffix (" KiB", " µs", "×").
struct DisplayUnit {
  double divisor = 1;
  std::string suffix;
};
DisplayUnit display_unit(double v, std::string_view unit);

std::string format_number(double v);                        // 4 significant digits; 1e-05 as 1e-5
std::string format_value(double v, std::string_view unit);  // "643.3 KiB", "204.7 µs", "2.09×"
// "204.7 µs (142.1–298.3)": the median, then the range in the median's unit.
std::string format_with_range(double median, double min, double max, std::string_view unit);
// What a check expects: "≤ 1e-5" (expected 0), "16" (exact), "2.66 MiB ±10%".
std::string format_expected(double expected, double tolerance, std::string_view unit);

// Terminal columns a UTF-8 string takes (a code point each: dtlab prints no wide characters).
std::size_t display_width(std::string_view s);
// `text` broken at spaces into lines of at most `width` columns (a longer word is cut).
std::vector<std::string> wrap(const std::string& text, std::size_t width);
// Each line of `text` wrapped to `width`, the continuation lines indented 4 columns past the
// line's own indent ("  rank 1 waits ..." continues under "waits"-level text, never at column 0).
std::string wrap_hanging(const std::string& text, std::size_t width);
// `s` padded with spaces to `width` columns, on the left (right-aligned) or the right.
std::string pad(const std::string& s, std::size_t width, bool right_align = false);

// "1 run", "5 runs": a count and its noun in the right number (`plural` when adding "s" is wrong).
std::string count_of(long long n, const std::string& singular, const std::string& plural = "");

// The columns a report printed on stdout may take, so the terminal never breaks a word: the
// terminal's own width when stdout is one, else $COLUMNS, else 100; within [60, 200].
int terminal_width();

}  // namespace dtl
