// Reports: readable units, rows found by id, JSON with raw SI values, and a terminal table
// that fits its width, leaves "predicted" blank where there is none and puts the cases of
// a `--variant all` run side by side.
#include "labs/report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "labs/ddp/ddp_lab.h"
#include "labs/measure.h"
#include "labs/report_format.h"

using namespace dtl;

namespace {

// The lines of `text` wider than `width` columns, each with its width (empty: none).
std::string lines_wider_than(const std::string& text, std::size_t width) {
  std::istringstream in(text);
  std::string wide;
  for (std::string line; std::getline(in, line);)
    if (display_width(line) > width) wide += std::to_string(display_width(line)) + ": " + line + "\n";
  return wide;
}

// The first line of `text` that holds `needle` ("" if none), or that begins with it.
std::string line_with(const std::string& text, const std::string& needle, bool at_start = false) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (at_start ? line.rfind(needle, 0) == 0 : line.find(needle) != std::string::npos) return line;
  return "";
}

}  // namespace

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

TEST(Repeated, MedianAndRange) {
  const Repeated odd = repeated({3, 1, 2, 10, 4});
  EXPECT_EQ(odd.median, 3);
  EXPECT_EQ(odd.spread.min, 1);
  EXPECT_EQ(odd.spread.max, 10);
  EXPECT_EQ(odd.spread.runs, 5);
  EXPECT_EQ(repeated({4, 1, 2, 3}).median, 2.5);
  EXPECT_EQ(repeated({}).spread.runs, 0);
  EXPECT_EQ(run_means({1, 3, 5, 7, 100}, 2), (std::vector<double>{2, 6}));  // a partial run is left out
}

TEST(Report, RowsAreFoundByIdAndChecksFail) {
  Report rep;
  rep.add("bucketed.exposed_comm_per_step", "exposed communication per step", 2e-4, "s");
  rep.check("bucketed.grad_bytes", "grad bytes per rank", 100, 100, "B").from("4 B/param");
  rep.check("bucketed.weight_diff", "max weight diff vs 1 rank", 3e-4, 0, "", 1e-4);
  const ReportRow* row = rep.find("bucketed.exposed_comm_per_step");
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->case_id(), "bucketed");
  EXPECT_EQ(row->metric(), "exposed_comm_per_step");
  EXPECT_EQ(rep.find("exposed communication per step"), nullptr) << "find takes the id, not the label";
  EXPECT_TRUE(rep.find("bucketed.grad_bytes")->passed());
  EXPECT_FALSE(rep.ok);
  ASSERT_EQ(rep.failures.size(), 1u);
  EXPECT_NE(rep.failures[0].find("bucketed.weight_diff"), std::string::npos) << rep.failures[0];
  EXPECT_NE(rep.failures[0].find("≤ 1e-4"), std::string::npos) << rep.failures[0];
}

TEST(Report, JsonKeepsRawSiValuesAndNullWhereNothingIsPredicted) {
  Report rep;
  rep.add("ring.time", "time (slowest rank)", 0, "s").over(repeated({2e-3, 1e-3, 3e-3}));
  rep.add("ring.speedup", "speedup", 2.1, "x").predict(4, "ideal: P×");
  rep.check("ring.wrong", "wrong elements", 0, 0, "").from("crafted: exact");
  const nlohmann::json j = rep.to_json();
  const auto& time = j["rows"][0];
  EXPECT_EQ(time["id"], "ring.time");
  EXPECT_EQ(time["measured"].get<double>(), 2e-3);  // seconds, not ms
  EXPECT_TRUE(time["predicted"].is_null());
  EXPECT_TRUE(time["tolerance"].is_null());
  EXPECT_EQ(time["spread"]["min"].get<double>(), 1e-3);
  EXPECT_EQ(time["spread"]["runs"].get<int>(), 3);
  EXPECT_EQ(j["rows"][1]["source"], "ideal: P×");
  EXPECT_FALSE(j["rows"][1].contains("provenance"));  // a formula's row reads as it always did
  EXPECT_EQ(j["rows"][2]["tolerance"].get<double>(), 0.0);
  EXPECT_TRUE(j["rows"][2]["passed"].get<bool>());
  rep.add("zb.bubble", "bubble", 0.2, "").predict(0.1, "simulator", Provenance::simulated);
  EXPECT_EQ(rep.to_json()["rows"][3]["provenance"], "simulated");
  EXPECT_EQ(parse_provenance("simulated"), Provenance::simulated);
}

TEST(ReportText, FitsItsWidthAndLeavesMissingPredictionsBlank) {
  Report rep;
  rep.lab = "ddp";
  rep.backend = "threads";
  rep.ranks = 4;
  rep.setup = {"link pcie4: 32 GB/s, α 5 µs",
               "MLP 256 wide × 4 layers (164672 params)",
               "batch 64 (16 per rank)",
               "fp32",
               "variant bucketed",
               "buckets ≤ 25 MiB"};
  rep.add("bucketed.waiting", "waiting for slower ranks per step, a label long enough to need wrapping twice over",
          7e-4, "s")
      .over(repeated({6e-4, 7e-4, 1.1e-3}));
  rep.add("bucketed.loss_first", "loss, first step", 0.003378, "");
  rep.add("bucketed.speedup", "speedup over 1 rank", 2.2, "x").predict(4, "ideal: P×");
  rep.check("bucketed.memory", "memory per rank: peak vs estimate", 2786304, 2786304, "B", 278630.4)
      .from("model + AdamW + activations, a source long enough to wrap");
  rep.add("one_rank_step_time", "step time of 1 rank on the global batch", 8.4e-4, "s");  // no case: no heading
  rep.notes.push_back(std::string(150, 'n'));
  for (const int width : {100, 80}) {
    const std::string text = rep.to_text(width);
    EXPECT_EQ(lines_wider_than(text, std::size_t(width)), "") << "at width " << width << ":\n" << text;
  }
  const std::string text = rep.to_text();
  const std::string loss = line_with(text, "loss, first step");
  EXPECT_EQ(loss.substr(loss.find_last_not_of(' ') - 7), "0.003378") << "nothing after the measured value:\n" << text;
  EXPECT_NE(line_with(text, "speedup over 1 rank").find("ideal: P×"), std::string::npos) << text;
  EXPECT_NE(line_with(text, "memory per rank").find("2.657 MiB ±10%"), std::string::npos) << text;
  EXPECT_NE(text.find("700 µs (600–1100)"), std::string::npos) << text;
  EXPECT_EQ(text.find("\n\n\n"), std::string::npos) << "no empty heading for rows about the whole run:\n" << text;
  EXPECT_NE(text.find("result: OK, 1 check passed"), std::string::npos) << text;
}

// Every word of a table's cells, whole, in the rendered text: a column too narrow for a
// word would print "activatio" on one line and "n" on the next (issue 28 met that).
std::string words_broken(const std::string& text, const std::vector<std::string>& cells) {
  std::string broken;
  for (const std::string& cell : cells) {
    std::istringstream words(cell);
    for (std::string word; words >> word;)
      if (text.find(word) == std::string::npos) broken += "'" + word + "' of '" + cell + "'\n";
  }
  return broken;
}

TEST(ReportText, NoTableBreaksAWordAcrossLinesAtAnyWidth) {
  Report rep;
  rep.lab = "pipeline";
  rep.columns = {"gpipe", "1f1b", "interleaved"};
  const std::vector<std::string> cells = {"activations in flight per stage at the peak", "2·M·activation per boundary",
                                          "bubble fraction of the step", "(P-1)/(M+P-1)·ideal_time_of_the_step",
                                          "bytes sent per rank per step"};
  for (const char* c : {"gpipe", "1f1b", "interleaved"}) {
    const std::string n = std::string(c) + ".";
    rep.check(n + "in_flight", cells[0], 8, 8, "", 0).from(cells[1]);
    rep.check(n + "bubble", cells[2], 0.27, 0.2727, "", 0.05).from(cells[3]);
    rep.add(n + "bytes", cells[4], 1.5e6, "B");
  }
  for (const int width : {100, 80, 60, 40}) {
    const std::string text = rep.to_text(width);
    EXPECT_EQ(words_broken(text, cells), "") << "at width " << width << ":\n" << text;
  }
}

TEST(ReportText, CasesOfColumnsAreOneTableWithAColumnEach) {
  Report rep;
  rep.lab = "ddp";
  rep.columns = {"naive", "bucketed"};
  for (const char* v : {"naive", "bucketed"}) {
    const std::string n = std::string(v) + ".";
    rep.add(n + "exposed", "exposed communication per step", v[0] == 'n' ? 1e-3 : 2e-4, "s");
    rep.check(n + "memory", "memory per rank", 100, v[0] == 'n' ? 100 : 90, "B", 20).from("estimate");
    rep.add(n + "speedup", "speedup over 1 rank", 2, "x").predict(4, "ideal: P×");
  }
  rep.add("one_rank_step_time", "step time of 1 rank", 1e-3, "s");
  const std::string text = rep.to_text();
  const std::string header = line_with(text, "naive");
  EXPECT_LT(header.find("naive"), header.find("bucketed")) << text;
  const std::string exposed = line_with(text, "exposed communication per step");
  EXPECT_NE(exposed.find("1 ms"), std::string::npos) << text;
  EXPECT_NE(exposed.find("200 µs"), std::string::npos) << "one row, a column per case:\n" << text;
  // The same prediction for every case stands once; different ones get a row of their own.
  EXPECT_NE(line_with(text, "speedup over 1 rank").find("ideal: P×"), std::string::npos) << text;
  const std::string predicted = line_with(text, "  predicted ", true);
  EXPECT_NE(predicted.find("100 B"), std::string::npos) << text;
  EXPECT_NE(predicted.find("90 B"), std::string::npos) << text;
  EXPECT_NE(line_with(text, "step time of 1 rank").find("1 ms"), std::string::npos) << "listed below:\n" << text;
}

// A run gone to NaN must fail its checks against a reference: std::max(worst, NaN) keeps
// worst, so every lab's "largest difference" goes through larger_difference.
TEST(Measure, ANanDifferenceCountsAsInfinite) {
  EXPECT_EQ(dtl::larger_difference(0.5, 0.25), 0.5);
  EXPECT_EQ(dtl::larger_difference(0.5, 2.0), 2.0);
  EXPECT_TRUE(std::isinf(dtl::larger_difference(0.5, NAN)));
  const std::vector<float> ref = {1, 2, 3}, same = {1, 2, 3.5f}, gone = {1, NAN, 3};
  EXPECT_EQ(dtl::max_abs_difference(same, ref), 0.5);
  EXPECT_TRUE(std::isinf(dtl::max_abs_difference(gone, ref)));
  EXPECT_TRUE(std::isinf(dtl::max_abs_difference(ref, gone)));
}
