// The report's plots (labs/report.h ReportPlot: a sweep's curve, x and y in raw SI units,
// a label per point), read defensively from the report's JSON, and the axes the report
// view draws them on. Plain code so tests can check it; viz/app/report_view.cpp draws.
#pragma once

#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "viz/model/axes.h"

namespace dtl::viz {

struct Plot {
  std::string id, title;
  std::string x_label, x_unit, y_label, y_unit;  // "B", "s", "B/s", "x", "" (as ReportRow::unit)
  std::vector<double> x, y;                      // the same length, finite
  std::vector<std::string> point_labels;         // one per point, or empty
};

struct ReportPlots {
  std::vector<Plot> plots;
  std::vector<std::string> skipped;  // one short note per plot left out: "plot 2 ('depth'): x has 4 points, y 3"
};

// Bounds (in the spirit of core/trace/trace_limits.h): plots beyond the first kMaxPlots are
// left out with a note, as is a plot with more than kMaxPlotPoints points.
inline constexpr std::size_t kMaxPlots = 16;
inline constexpr std::size_t kMaxPlotPoints = 4096;

// `report` is the whole report object; no "plots" (older traces) gives none. Never throws.
ReportPlots parse_report_plots(const nlohmann::json& report);

// An axis from the data's range [lo, hi]: ticks at a round step ("B": a power of two, "s"
// and the rest: 1-2-5) covering it, at most about max_ticks of them, labelled in the unit
// that suits the range ("1.5 MiB", "250 µs", "3 x").
struct PlotAxis {
  double lo = 0, hi = 1;  // the first and last tick: what the plot's edges show
  std::vector<Tick> ticks;
};
PlotAxis plot_axis(double lo, double hi, const std::string& unit, int max_ticks);
// One value in its unit, readable: "1.5 MiB", "2.25 ms", "0.8 GB/s", "12 x", "7".
std::string format_value(double v, const std::string& unit);

}  // namespace dtl::viz
