#include "viz/model/report_plots.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "viz/model/axes.h"
#include "viz/model/trace_data.h"

namespace dtl::viz {

namespace {

using nlohmann::json;

std::string text(const json& p, const char* key, std::size_t max_chars) {
  const auto it = p.find(key);
  return it != p.end() && it->is_string() ? printable(it->get<std::string>(), max_chars) : std::string();
}

// A finite number array of at most kMaxPlotPoints, or why not.
std::string numbers(const json& p, const char* key, std::vector<double>& out) {
  const auto it = p.find(key);
  if (it == p.end() || !it->is_array()) return std::string("no '") + key + "' array";
  if (it->size() > kMaxPlotPoints) return "more than " + std::to_string(kMaxPlotPoints) + " points (the limit)";
  for (const json& v : *it) {
    if (!v.is_number() || !std::isfinite(v.get<double>()))
      return std::string("'") + key + "' holds a value that is not a finite number";
    out.push_back(v.get<double>());
  }
  return "";
}

std::string why_not(const json& p, Plot& plot) {
  if (!p.is_object()) return "not an object";
  if (std::string e = numbers(p, "x", plot.x); !e.empty()) return e;
  if (std::string e = numbers(p, "y", plot.y); !e.empty()) return e;
  if (plot.x.size() != plot.y.size())
    return "x has " + std::to_string(plot.x.size()) + " points, y " + std::to_string(plot.y.size());
  if (plot.x.empty()) return "no points";
  if (const auto it = p.find("point_labels"); it != p.end() && !it->is_null()) {
    if (!it->is_array()) return "'point_labels' is not an array";
    if (!it->empty() && it->size() != plot.x.size())
      return std::to_string(it->size()) + " point labels for " + std::to_string(plot.x.size()) + " points";
    for (const json& l : *it)
      plot.point_labels.push_back(l.is_string() ? printable(l.get<std::string>(), 24) : std::string());
  }
  return "";
}

// A number with an SI prefix (bandwidths: "3.47 GB/s", as the terminal report prints them).
std::string si(double v, double magnitude, int decimals, const std::string& unit) {
  static const struct {
    double f;
    const char* p;
  } prefixes[] = {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}, {1, ""}};
  for (const auto& x : prefixes)
    if (std::fabs(magnitude) >= x.f || x.f == 1) return trimmed(v / x.f, decimals) + " " + x.p + unit;
  return "";
}

std::string plain(double v, int decimals, const std::string& unit) {
  return trimmed(v, decimals) + (unit.empty() ? "" : " " + unit);
}

int decimals_for(double step) { return step >= 1 ? 0 : int(std::ceil(-std::log10(step) - 1e-9)); }

}  // namespace

ReportPlots parse_report_plots(const json& report) {
  ReportPlots out;
  if (!report.is_object()) return out;
  const auto it = report.find("plots");
  if (it == report.end() || it->is_null()) return out;
  if (!it->is_array()) {
    out.skipped.push_back("'plots' is not a list");
    return out;
  }
  std::size_t index = 0;
  for (const json& p : *it) {
    ++index;
    Plot plot;
    plot.id = p.is_object() ? text(p, "id", 40) : "";
    plot.title = p.is_object() ? text(p, "title", 80) : "";
    const std::string name = "plot " + std::to_string(index) + (plot.title.empty() ? "" : " ('" + plot.title + "')");
    if (out.plots.size() >= kMaxPlots) {
      out.skipped.push_back(std::to_string(it->size() - index + 1) + " more plots not shown (the limit is " +
                            std::to_string(kMaxPlots) + ")");
      break;
    }
    if (std::string why = why_not(p, plot); !why.empty()) {
      out.skipped.push_back(name + ": " + why);
      continue;
    }
    plot.x_label = text(p, "x_label", 60), plot.x_unit = text(p, "x_unit", 12);
    plot.y_label = text(p, "y_label", 60), plot.y_unit = text(p, "y_unit", 12);
    out.plots.push_back(std::move(plot));
  }
  return out;
}

PlotAxis plot_axis(double lo, double hi, const std::string& unit, int max_ticks) {
  PlotAxis a;
  if (!std::isfinite(lo) || !std::isfinite(hi)) return a;
  if (hi < lo) std::swap(lo, hi);
  if (hi == lo) {  // one value (or all equal): a range around it
    const double pad = lo == 0 ? 1 : std::fabs(lo) * 0.1;
    lo -= pad, hi += pad;
  }
  const double want = (hi - lo) / double(std::max(1, max_ticks));
  double step = 1;
  if (unit == "B") {
    while (step < want && step < 0x1p60) step *= 2;
  } else {
    const double decade = std::pow(10.0, std::floor(std::log10(want)));
    step = 10 * decade;
    for (double m : {1.0, 2.0, 5.0})
      if (m * decade >= want) {
        step = m * decade;
        break;
      }
  }
  a.lo = std::floor(lo / step) * step;
  a.hi = std::max(a.lo + step, std::ceil(hi / step) * step);
  const double magnitude = std::max(std::fabs(a.lo), std::fabs(a.hi));
  for (double k = 0; a.lo + k * step <= a.hi + step * 1e-9 && k <= 1000; k += 1) {
    const double v = a.lo + k * step;
    std::string label;
    if (unit == "B")
      label = format_bytes(v, magnitude);
    else if (unit == "s")
      label = format_duration(v * 1e9, step * 1e9, magnitude * 1e9);
    else if (unit == "B/s")
      label = si(v, magnitude, 3, "B/s");
    else
      label = plain(v, decimals_for(step), unit);
    a.ticks.push_back({v, std::move(label)});
  }
  return a;
}

std::string format_value(double v, const std::string& unit) {
  if (!std::isfinite(v)) return "-";
  if (unit == "B") return format_bytes(v, v);
  if (unit == "s") return format_duration(v * 1e9, std::fabs(v) * 1e9 / 1000, v * 1e9);
  if (unit == "B/s") return si(v, v, 3, "B/s");
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return std::string(buf) + (unit.empty() ? "" : " " + unit);
}

}  // namespace dtl::viz
