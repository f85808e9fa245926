#include "labs/report.h"

#include <cmath>
#include <cstdio>

namespace dtl {

void Report::add(std::string quantity, double measured, std::optional<double> predicted, std::string unit) {
  rows.push_back({std::move(quantity), measured, predicted, std::move(unit)});
}

void Report::check(std::string quantity, double measured, double expected, std::string unit, double tolerance) {
  if (!(std::fabs(measured - expected) <= tolerance)) {
    ok = false;
    failures.push_back(quantity + ": measured " + std::to_string(measured) + ", expected " + std::to_string(expected));
  }
  add(std::move(quantity), measured, expected, std::move(unit));
}

const ReportRow* Report::find(std::string_view quantity) const {
  for (const auto& r : rows)
    if (r.quantity == quantity) return &r;
  return nullptr;
}

nlohmann::json Report::to_json() const {
  nlohmann::json j = {{"lab", lab}, {"backend", backend}, {"ranks", ranks}, {"config", config}, {"ok", ok}};
  j["rows"] = nlohmann::json::array();
  for (const auto& r : rows)
    j["rows"].push_back({{"quantity", r.quantity}, {"measured", r.measured},
                         {"predicted", r.predicted ? nlohmann::json(*r.predicted) : nlohmann::json(nullptr)},
                         {"unit", r.unit}});
  if (!failures.empty()) j["failures"] = failures;
  return j;
}

namespace {
std::string number(double v) {
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}
}  // namespace

std::string Report::to_text() const {
  std::size_t w = 8;
  for (const auto& r : rows) w = std::max(w, r.quantity.size());
  std::string out = "lab " + lab + " · backend " + backend + " · " + std::to_string(ranks) + " ranks\n";
  char line[512];
  std::snprintf(line, sizeof line, "  %-*s %14s %14s  %s\n", int(w), "quantity", "measured", "predicted", "unit");
  out += line;
  for (const auto& r : rows) {
    std::snprintf(line, sizeof line, "  %-*s %14s %14s  %s\n", int(w), r.quantity.c_str(), number(r.measured).c_str(),
                  r.predicted ? number(*r.predicted).c_str() : "-", r.unit.c_str());
    out += line;
  }
  out += ok ? "  result: OK\n" : "  result: FAILED\n";
  for (const auto& f : failures) out += "    " + f + "\n";
  return out;
}

}  // namespace dtl
