#include "viz/model/compare_model.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

namespace dtl::viz {

namespace {

struct Row {
  std::string id, label, unit;
  std::optional<double> measured;
};

std::string string_field(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::vector<Row> rows_of(const nlohmann::json& report) {
  std::vector<Row> rows;
  if (!report.is_object() || !report.contains("rows") || !report["rows"].is_array()) return rows;
  for (const nlohmann::json& r : report["rows"]) {
    if (!r.is_object() || string_field(r, "id").empty()) continue;
    Row row{string_field(r, "id"), string_field(r, "label"), string_field(r, "unit"), std::nullopt};
    if (const auto m = r.find("measured"); m != r.end() && m->is_number()) row.measured = m->get<double>();
    rows.push_back(std::move(row));
  }
  return rows;
}

// "naive.step_time" → "step_time"; an id without a case is its own metric.
std::string metric_of(const std::string& id) {
  const std::size_t dot = id.find('.');
  return dot == std::string::npos ? id : id.substr(dot + 1);
}

// Index of the one unpaired row of `rows` with this metric; rows.size() when none or several.
std::size_t unique_metric(const std::vector<Row>& rows, const std::vector<bool>& paired, const std::string& metric) {
  std::size_t found = rows.size();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (paired[i] || metric_of(rows[i].id) != metric) continue;
    if (found != rows.size()) return rows.size();  // several: which one is meant is not known
    found = i;
  }
  return found;
}

}  // namespace

std::optional<double> CompareRow::difference() const {
  if (!a || !b) return std::nullopt;
  return *b - *a;
}

std::optional<double> CompareRow::ratio() const {
  if (!a || !b || *a == 0) return std::nullopt;
  return *b / *a;
}

std::vector<CompareRow> compare_rows(const nlohmann::json& report_a, const nlohmann::json& report_b) {
  const std::vector<Row> ra = rows_of(report_a), rb = rows_of(report_b);
  std::vector<bool> paired_a(ra.size(), false), paired_b(rb.size(), false);
  std::vector<std::size_t> partner(ra.size(), rb.size());
  std::map<std::string, std::size_t> b_by_id;
  for (std::size_t j = 0; j < rb.size(); ++j) b_by_id.emplace(rb[j].id, j);
  for (std::size_t i = 0; i < ra.size(); ++i)  // the same id first
    if (const auto it = b_by_id.find(ra[i].id); it != b_by_id.end() && !paired_b[it->second])
      partner[i] = it->second, paired_a[i] = paired_b[it->second] = true;
  for (std::size_t i = 0; i < ra.size(); ++i) {  // then the same metric in another case, when unambiguous
    if (paired_a[i]) continue;
    const std::string metric = metric_of(ra[i].id);
    const std::size_t j = unique_metric(rb, paired_b, metric);
    if (j == rb.size() || unique_metric(ra, paired_a, metric) != i) continue;
    partner[i] = j, paired_a[i] = paired_b[j] = true;
  }
  std::vector<CompareRow> out;
  for (std::size_t i = 0; i < ra.size(); ++i) {
    CompareRow row{ra[i].id, "", ra[i].label, ra[i].unit, ra[i].measured, std::nullopt};
    if (partner[i] < rb.size()) row.id_b = rb[partner[i]].id, row.b = rb[partner[i]].measured;
    out.push_back(std::move(row));
  }
  for (std::size_t j = 0; j < rb.size(); ++j)
    if (!paired_b[j]) out.push_back({"", rb[j].id, rb[j].label, rb[j].unit, std::nullopt, rb[j].measured});
  return out;
}

std::string value_title(const nlohmann::json& report) {
  const std::string title = report.is_object() ? string_field(report, "value_title") : std::string();
  return title.empty() ? "measured" : title;
}

CompareAlignment align_runs(const std::optional<TimeRange>& step_a, TimeRange whole_a,
                            const std::optional<TimeRange>& step_b, TimeRange whole_b) {
  const TimeRange a = step_a ? *step_a : whole_a, b = step_b ? *step_b : whole_b;
  CompareAlignment out;
  out.anchor_a = double(a.begin);
  out.anchor_b = double(b.begin);
  out.span = std::max({1.0, double(a.end - a.begin), double(b.end - b.begin)});
  return out;
}

}  // namespace dtl::viz
