// What a lab returns: rows of figures, each measured beside what a formula predicts, and
// whether every check the lab made passed. The CLI prints it (labs/report_text.cpp), the
// visualizer overlays it, tests assert on it.
//
// A row has a stable id, "case.metric" ("bucketed.exposed_comm_per_step",
// "ring.bytes_sent_per_rank"; a row about the whole run has no case: "one_rank_step_time").
// Tests, JSON and the visualizer use the id; people read the label. Values are raw SI
// (bytes, seconds, bytes/second); the terminal picks KiB, µs, GB/s.
//
//   rep.add("bucketed.speedup", "speedup over 1 rank", 2.1, "x").predict(4, "ideal: P×").over(runs);
//   rep.check("ring.bytes_sent_per_rank", "bytes sent per rank (max)", sent, formula, "B").from("ring 2(P-1)/P·N");
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/trace/vocab.h"

namespace dtl {

// A timing repeated over runs: the row's measured value is their median.
struct Spread {
  double min = 0, max = 0;
  int runs = 0;
};
// The median (of an even count: the mean of the middle two) and the range of `runs`.
// Empty: median 0, runs 0.
struct Repeated {
  double median = 0;
  Spread spread;
};
Repeated repeated(std::vector<double> runs);

struct ReportRow {
  std::string id;     // "case.metric", stable
  std::string label;  // for people; the case is shown as the section or column
  double measured = 0;
  std::string unit;                 // SI: "B", "s", "B/s", "B/param", "x" (a ratio); "" for a plain number or a count
  std::optional<double> predicted;  // nullopt where no formula applies
  std::string source;               // where the prediction comes from, in a word: "ideal: P×", "16 B/param"
  Provenance provenance = Provenance::formula;  // and what kind of thing gave it
  std::optional<double> tolerance;              // a check: it passes while |measured - predicted| <= tolerance
  std::optional<Spread> spread;                 // a timing over several runs (measured is the median)

  std::string case_id() const;  // before the first '.', or "" (a row about the whole run)
  std::string metric() const;   // after it
  bool is_check() const { return tolerance.has_value(); }
  bool passed() const;  // true unless a check that failed

  // Setters for the row just added (the reference is valid until the next add).
  ReportRow& predict(double value, std::string why, Provenance from = Provenance::formula);
  ReportRow& from(std::string why);    // the source of a check's expected value
  ReportRow& over(const Repeated& r);  // measured = the median, spread = min-max
};

// A curve a sweep measured (ZeRO's prefetch depth: exposed all-gather time against peak
// memory): points in raw SI units, each with its label ("depth 2"). The terminal prints
// them as a table of rows; the visualizer's report view draws them as a line plot.
struct ReportPlot {
  std::string id, title;
  std::string x_label, x_unit, y_label, y_unit;  // units as ReportRow::unit
  std::vector<double> x, y;
  std::vector<std::string> point_labels;  // one per point, or empty
};

// Plots as the report's JSON holds them ([{id, title, x_label, ...}]).
nlohmann::json plots_json(const std::vector<ReportPlot>& plots);

struct Report {
  std::string lab;
  std::string backend;
  int ranks = 0;
  nlohmann::json config = nlohmann::json::object();
  // The header's first words (default "LAB lab · N ranks (BACKEND)"), and the value column's
  // title: "measured" for a lab, "estimate" for a planner that runs nothing.
  std::string title, value_title = "measured";
  std::vector<std::string> setup;    // the configuration in words, for the header: "MLP 256×4", "fp32"
  std::vector<std::string> notes;    // lines under the table: how the timings were taken, what a figure means;
                                     // one that fits the width is printed as written (spaces kept: charts)
  std::vector<std::string> columns;  // cases compared side by side (a column each) when there are 2 or more
  std::vector<ReportRow> rows;
  std::vector<ReportPlot>
      plots;       // sweeps, in JSON as "plots": [{id, title, x_label, x_unit, y_label, y_unit, x, y, point_labels}]
  bool ok = true;  // every check the lab makes passed
  std::vector<std::string> failures;  // which checks failed, in words

  ReportRow& add(std::string id, std::string label, double measured, std::string unit);
  // A check: adds a row (measured vs expected) and marks the report failed if |diff| > tolerance.
  ReportRow& check(std::string id, std::string label, double measured, double expected, std::string unit,
                   double tolerance = 0);
  const ReportRow* find(std::string_view id) const;  // by id; nullptr if there is none
  nlohmann::json to_json() const;
  std::string to_text(int width = 100) const;  // labs/report_text.cpp
};

class Trace;
// A running lab's curves so far, for a live viewer (its report view draws them until the
// report arrives): the trace's meta "live_plots". Call it from one rank; a no-op without a trace.
void publish_live_plots(Trace* trace, const std::vector<ReportPlot>& plots);

}  // namespace dtl
