#include "labs/lab.h"

#include <cmath>
#include <cstdio>

#include "core/comm/launch_env.h"
#include "core/error.h"
#include "core/memory/device_ops.h"

namespace dtl {

const std::string& LabConfig::option(const std::string& key) const {
  auto it = options.find(key);
  if (it == options.end()) throw Error("lab option '" + key + "' is not set (a lab asked for an option it did not declare)");
  return it->second;
}

nlohmann::json LabConfig::to_json() const {
  nlohmann::json j = {{"ranks", ranks}, {"bytes", bytes}, {"dtype", std::string(dtype_name(dtype))},
                      {"iters", iters}, {"warmup", warmup}};
  if (device != Device::Kind::cpu) j["device"] = "cuda";
  for (const auto& [k, v] : options) j[k] = v;
  if (slow_rank >= 0) j["slow_rank"] = {{"rank", slow_rank}, {"factor", slow_factor}};
  if (link.active()) j["link"] = {{"name", link.name}, {"bandwidth_GBps", link.bandwidth_GBps}, {"latency_us", link.latency_us}};
  return j;
}

Device rank_device(Device::Kind kind, const Comm& comm) {
  if (kind == Device::Kind::cpu) return Device::cpu();
  const int gpus = device_ops(Device::cuda(0)).device_count();
  const std::optional<LaunchEnv> env = detect_launch_env();
  const int local = env ? env->local_rank : comm.global_rank();
  return Device::cuda(local % gpus);
}

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

LabConfig with_defaults(const LabInfo& lab, LabConfig cfg) {
  for (const auto& opt : lab.options) {
    auto it = cfg.options.find(opt.name);
    if (it == cfg.options.end()) {
      cfg.options[opt.name] = opt.default_value;
    } else if (!opt.choices.empty() &&
               std::find(opt.choices.begin(), opt.choices.end(), it->second) == opt.choices.end()) {
      std::string all;
      for (const auto& c : opt.choices) all += (all.empty() ? "" : ", ") + c;
      throw UsageError("--" + opt.name + " '" + it->second + "' is not one of: " + all);
    }
  }
  for (const auto& [k, v] : cfg.options) {
    bool known = false;
    for (const auto& opt : lab.options) known = known || opt.name == k;
    if (!known) throw UsageError("lab '" + lab.name + "' has no option --" + k);
  }
  return cfg;
}

const LabInfo* find_lab(std::string_view name) {
  for (const auto& lab : lab_registry())
    if (lab.name == name) return &lab;
  return nullptr;
}

}  // namespace dtl
