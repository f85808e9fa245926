// Two runs side by side (dtlab-viz A B --compare): their report rows paired with the
// difference, and the time windows that draw both timelines on one scale with the start
// of each run's timed step at the same x. Plain code so tests check it without a window.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "viz/model/layout.h"

namespace dtl::viz {

// One quantity of both runs. Rows pair by id; a row whose id the other run lacks pairs with
// the other's row of the same metric (the id after its case: "naive.step_time" with
// "bucketed.step_time") when exactly one unpaired row on each side has that metric.
struct CompareRow {
  std::string id_a, id_b;  // empty: the run has no such row
  std::string label, unit;
  std::optional<double> a, b;                // each run's figure (its report's value_title says what it is)
  std::optional<double> difference() const;  // b - a
  std::optional<double> ratio() const;       // b / a, when a != 0
};

// A's rows in A's order, then the rows only B has. A report without rows gives none; fields
// of the wrong type count as missing (a trace may hold anything). Never throws.
std::vector<CompareRow> compare_rows(const nlohmann::json& report_a, const nlohmann::json& report_b);

// What each run's figures are: its report's value_title ("measured", "simulated", a plan's
// "estimate"), "measured" when it does not say.
std::string value_title(const nlohmann::json& report);

// Where each timeline's window starts and how long it is: both as long (the longer step),
// each beginning at its own timed step's start (first_timed_step), so equal times since the
// step's start fall at the same x. A run without a timed step aligns its whole shown range.
struct CompareAlignment {
  double anchor_a = 0, anchor_b = 0;  // ns, each in its own trace's clock
  double span = 1;                    // ns, > 0
};
CompareAlignment align_runs(const std::optional<TimeRange>& step_a, TimeRange whole_a,
                            const std::optional<TimeRange>& step_b, TimeRange whole_b);

}  // namespace dtl::viz
