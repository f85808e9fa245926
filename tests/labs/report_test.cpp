// Reports: the readable units a report's raw SI values are printed in.
#include <gtest/gtest.h>

#include "labs/report_format.h"

using namespace dtl;

TEST(ReportFormat, BytesInBinaryUnits) {
  EXPECT_EQ(format_value(16, "B"), "16 B");
  EXPECT_EQ(format_value(658688, "B"), "643.2 KiB");
  EXPECT_EQ(format_value(1.732e7, "B"), "16.52 MiB");
  EXPECT_EQ(format_value(3.0 * (1 << 30), "B"), "3 GiB");
}

TEST(ReportFormat, SecondsInMicroMilliOrSeconds) {
  EXPECT_EQ(format_value(2.047e-4, "s"), "204.7 µs");
  EXPECT_EQ(format_value(1.184e-3, "s"), "1.184 ms");
  EXPECT_EQ(format_value(2.5, "s"), "2.5 s");
  EXPECT_EQ(format_value(3e-8, "s"), "30 ns");
  EXPECT_EQ(format_value(0, "s"), "0 s");
}

TEST(ReportFormat, BandwidthRatiosAndPlainNumbers) {
  EXPECT_EQ(format_value(3.546e9, "B/s"), "3.546 GB/s");  // GB = 1e9, as nccl-tests
  EXPECT_EQ(format_value(2.0912, "x"), "2.09×");
  EXPECT_EQ(format_value(4, "x"), "4×");
  EXPECT_EQ(format_value(1.676e-07, ""), "1.676e-7");
  EXPECT_EQ(format_value(6.739e-4, ""), "6.739e-4");
  EXPECT_EQ(format_value(0.003378, ""), "0.003378");
  EXPECT_EQ(format_value(164672, ""), "164672");
  EXPECT_EQ(format_value(16, "B/param"), "16 B/param");
}

TEST(ReportFormat, ExpectedValuesOfChecks) {
  EXPECT_EQ(format_expected(0, 1e-4, ""), "≤ 1e-4");
  EXPECT_EQ(format_expected(16, 0, ""), "16");
  EXPECT_EQ(format_expected(2786304, 278630.4, "B"), "2.657 MiB ±10%");
  EXPECT_EQ(format_expected(1 << 20, 32, "B"), "1 MiB ±32 B");
}

TEST(ReportFormat, MedianWithRangeInTheMediansUnit) {
  EXPECT_EQ(format_with_range(2.047e-4, 1.42e-4, 2.98e-4, "s"), "204.7 µs (142–298)");
  EXPECT_EQ(format_with_range(1.2e-3, 9e-4, 1.5e-3, "s"), "1.2 ms (0.9–1.5)");
}

TEST(ReportFormat, WidthCountsCodePointsAndWrapBreaksAtSpaces) {
  EXPECT_EQ(display_width("µs ≤ ×"), 6u);
  const std::vector<std::string> lines = wrap("exposed communication per step", 14);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "exposed");
  EXPECT_EQ(lines[1], "communication");
  EXPECT_EQ(lines[2], "per step");
  EXPECT_EQ(wrap("abcdefghij", 4), (std::vector<std::string>{"abcd", "efgh", "ij"}));
  EXPECT_EQ(pad("µs", 4, true), "  µs");
}
