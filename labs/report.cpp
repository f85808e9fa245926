#include "labs/report.h"

#include <algorithm>
#include <cmath>

#include "core/trace/trace.h"
#include "labs/report_format.h"

namespace dtl {

Repeated repeated(std::vector<double> runs) {
  Repeated r;
  if (runs.empty()) return r;
  std::sort(runs.begin(), runs.end());
  const std::size_t n = runs.size();
  r.median = n % 2 ? runs[n / 2] : (runs[n / 2 - 1] + runs[n / 2]) / 2;
  r.spread = {runs.front(), runs.back(), int(n)};
  return r;
}

std::string ReportRow::case_id() const {
  const auto dot = id.find('.');
  return dot == std::string::npos ? std::string() : id.substr(0, dot);
}

std::string ReportRow::metric() const {
  const auto dot = id.find('.');
  return dot == std::string::npos ? id : id.substr(dot + 1);
}

bool ReportRow::passed() const { return !tolerance || (predicted && std::fabs(measured - *predicted) <= *tolerance); }

ReportRow& ReportRow::predict(double value, std::string why, Provenance from) {
  predicted = value;
  source = std::move(why);
  provenance = from;
  return *this;
}

ReportRow& ReportRow::from(std::string why) {
  source = std::move(why);
  return *this;
}

ReportRow& ReportRow::over(const Repeated& r) {
  measured = r.median;
  spread = r.spread;
  return *this;
}

ReportRow& Report::add(std::string id, std::string label, double measured, std::string unit) {
  ReportRow row;
  row.id = std::move(id);
  row.label = std::move(label);
  row.measured = measured;
  row.unit = std::move(unit);
  rows.push_back(std::move(row));
  return rows.back();
}

ReportRow& Report::check(std::string id, std::string label, double measured, double expected, std::string unit,
                         double tolerance) {
  ReportRow& row = add(std::move(id), std::move(label), measured, std::move(unit));
  row.predicted = expected;
  row.tolerance = tolerance;
  if (!row.passed()) {
    ok = false;
    failures.push_back(row.id + " (" + row.label + "): measured " + format_value(measured, row.unit) + ", expected " +
                       format_expected(expected, tolerance, row.unit));
  }
  return row;
}

const ReportRow* Report::find(std::string_view id) const {
  for (const auto& r : rows)
    if (r.id == id) return &r;
  return nullptr;
}

nlohmann::json Report::to_json() const {
  using nlohmann::json;
  json j = {{"lab", lab},     {"backend", backend}, {"ranks", ranks},     {"config", config},          {"ok", ok},
            {"setup", setup}, {"notes", notes},     {"columns", columns}, {"value_title", value_title}};
  j["rows"] = json::array();
  for (const auto& r : rows) {
    json row = {{"id", r.id},
                {"label", r.label},
                {"measured", r.measured},
                {"unit", r.unit},
                {"source", r.source},
                {"predicted", r.predicted ? json(*r.predicted) : json(nullptr)},
                {"tolerance", r.tolerance ? json(*r.tolerance) : json(nullptr)}};
    if (r.is_check()) row["passed"] = r.passed();
    if (r.provenance != Provenance::formula) row["provenance"] = provenance_name(r.provenance);
    if (r.spread) row["spread"] = {{"min", r.spread->min}, {"max", r.spread->max}, {"runs", r.spread->runs}};
    j["rows"].push_back(std::move(row));
  }
  j["plots"] = plots_json(plots);
  if (!failures.empty()) j["failures"] = failures;
  return j;
}

nlohmann::json plots_json(const std::vector<ReportPlot>& plots) {
  using nlohmann::json;
  json out = json::array();
  for (const auto& p : plots)
    out.push_back({{"id", p.id},
                   {"title", p.title},
                   {"x_label", p.x_label},
                   {"x_unit", p.x_unit},
                   {"y_label", p.y_label},
                   {"y_unit", p.y_unit},
                   {"x", p.x},
                   {"y", p.y},
                   {"point_labels", p.point_labels}});
  return out;
}

void publish_live_plots(Trace* trace, const std::vector<ReportPlot>& plots) {
  if (trace) trace->set_meta(MetaKey::live_plots, nlohmann::json{{"plots", plots_json(plots)}}.dump());
}

}  // namespace dtl
