#include "bench/peer_results.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "core/error.h"

namespace dtl::peers {

Stats stats_of(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  s.min = v.front(), s.max = v.back(), s.n = int(n);
  return s;
}

std::string bytes_label(double bytes) {
  const char* units[] = {"B", "K", "M", "G"};
  int u = 0;
  while (bytes >= 999.5 && u < 3) bytes /= 1024, ++u;  // never "1e+03K": 1019K is 0.996M
  char s[32];
  std::snprintf(s, sizeof s, "%.3g%s", bytes, units[u]);
  return s;
}

namespace {

nlohmann::json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return nlohmann::json::parse(ss.str());
  } catch (const std::exception& e) {
    throw Error("bench results: " + p.string() + " is not valid JSON (" + e.what() + ")");
  }
}

// The out-of-place (or in-place) rows appended to `s` as one more repeat.
void add_sweep(Sweep& s, const nlohmann::json& j, bool inplace) {
  for (const auto& r : j.at("rows")) {
    if (r.value("inplace", false) != inplace) continue;
    const double bytes = r.at("bytes").get<double>();
    s.busbw_GBps[bytes].push_back(r.at("busbw_GBps").get<double>());
    s.time_s[bytes].push_back(r.at("time_us").get<double>() * 1e-6);
  }
  if (j.contains("link")) {
    s.link_latency_us = j["link"].value("latency_us", 0.0);
    s.link_GBps = j["link"].value("bandwidth_GBps", 0.0);
  }
  if (j.contains("memory_GBps")) {
    const auto& m = j["memory_GBps"];
    for (const char* k : {"read", "write", "copy", "triad"}) s.memory_GBps = std::max(s.memory_GBps, m.value(k, 0.0));
    s.ceiling_min_bytes = j.value("ceiling_min_bytes", 0.0);
  }
}

// A report row's median and its min–max over runs.
Stats stats_of_row(const nlohmann::json& r) {
  Stats s{r.at("measured").get<double>(), 0, 0, 1};
  s.min = s.max = s.median;
  if (r.contains("spread")) s.min = r["spread"]["min"], s.max = r["spread"]["max"], s.n = r["spread"]["runs"];
  return s;
}

// dtlab's lab report (bucketed.step_time: median and spread over runs) or torch_ddp.py's
// list of runs.
Stats ddp_steps(const nlohmann::json& j) {
  if (j.contains("step_s")) return stats_of(j["step_s"].get<std::vector<double>>());
  for (const auto& r : j.at("rows"))
    if (r.at("id") == "bucketed.step_time") return stats_of_row(r);
  throw Error("bench results: no bucketed.step_time row in a dtlab DDP report");
}

// dtlab's DDP lab report (`dtlab run ddp --json`) as one point of the scaling chart.
DdpPoint ddp_point(const nlohmann::json& j) {
  DdpPoint d;
  bool step = false;
  for (const auto& r : j.at("rows")) {
    const std::string id = r.at("id");
    if (id == "bucketed.step_time")
      d.step_s = stats_of_row(r), step = true;
    else if (id == "one_rank_step_time")
      d.one_rank_s = stats_of_row(r);
    else if (id == "bucketed.grad_bytes_reduced")
      d.grad_bytes = r.at("measured").get<double>();
  }
  if (!step) throw Error("bench results: no bucketed.step_time row in a dtlab DDP report");
  if (j.contains("config") && j["config"].contains("link")) {
    const auto& l = j["config"]["link"];
    d.link_name = l.value("name", ""), d.link_latency_us = l.value("latency_us", 0.0),
    d.link_GBps = l.value("bandwidth_GBps", 0.0);
  }
  return d;
}

}  // namespace

Results load_results(const std::string& dir) {
  Results res;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path());
  std::sort(files.begin(), files.end());  // repeats in order: r1, r2, ...
  const std::regex sweep_re("(ar|fit|trace|p2p)-(.+)-p([0-9]+)(-r[0-9]+)?\\.json"), ddp_re("ddp-(.+)-p([0-9]+)\\.json"),
      scaling_re("ddpscale-(.+)-p([0-9]+)\\.json");
  for (const auto& f : files) {
    const std::string name = f.filename().string();
    std::smatch m;
    if (name == "skipped.txt") {
      std::ifstream in(f);
      for (std::string line; std::getline(in, line);)
        if (!line.empty()) res.skipped.push_back(line);
    } else if (std::regex_match(name, m, sweep_re)) {
      auto& family = m[1] == "ar" ? res.all_reduce : m[1] == "fit" ? res.fit : m[1] == "p2p" ? res.p2p : res.trace;
      // The α–β sweeps are fitted in place: out of place, a point-to-point algorithm first
      // copies its input to the output, a cost outside the curriculum's formulas.
      add_sweep(family[m[2]][std::stoi(m[3])], read_json(f), m[1] == "fit");
    } else if (std::regex_match(name, m, ddp_re)) {
      res.ddp[m[1]][std::stoi(m[2])] = ddp_steps(read_json(f));
    } else if (std::regex_match(name, m, scaling_re)) {
      res.ddp_scaling[m[1]][std::stoi(m[2])] = ddp_point(read_json(f));
    }
  }
  return res;
}

}  // namespace dtl::peers
