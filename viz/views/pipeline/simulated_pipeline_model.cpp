// The simulator's timelines of a pipeline run (meta "pipeline_simulated.<schedule>", written
// by labs/pipeline/pipeline_lab.cpp): parsed defensively, since a trace is input, for the
// pipeline view's side-by-side comparison of schedules (pipeline_model.h).
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/trace/trace_limits.h"
#include "viz/views/pipeline/pipeline_model.h"

namespace dtl::viz {

namespace {

// Deeper than the format's three levels ({"actions": [[...]]}) is not ours: refused before
// the JSON parser builds it.
bool nested_at_most(std::string_view text, int most) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > most) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

bool whole_in(const nlohmann::json& j, std::int64_t lo, std::int64_t hi, std::int64_t& v) {
  if (j.is_number_unsigned()) {
    const std::uint64_t u = j.get<std::uint64_t>();
    if (u > std::uint64_t(hi)) return false;
    v = std::int64_t(u);
  } else if (j.is_number_integer()) {
    v = j.get<std::int64_t>();
  } else {
    return false;
  }
  return v >= lo && v <= hi;
}

bool finite_number(const nlohmann::json& j, double& v) {
  if (!j.is_number()) return false;
  v = j.get<double>();
  return std::isfinite(v);
}

}  // namespace

bool parse_simulated_pipeline(std::string_view json, SimulatedPipeline& out, std::string& why) {
  if (!nested_at_most(json, 4)) return why = "nested deeper than its format", false;
  const nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (!j.is_object()) return why = "not a JSON object", false;
  auto field = [&](const char* key, std::int64_t lo, std::int64_t hi, int& to) {
    std::int64_t v = 0;
    if (!j.contains(key) || !whole_in(j[key], lo, hi, v)) {
      why = std::string("'") + key + "' is not a whole number from " + std::to_string(lo) + " to " + std::to_string(hi);
      return false;
    }
    to = int(v);
    return true;
  };
  if (!field("stages", 1, trace_limits::kMaxRanks, out.stages) ||
      !field("micro_batches", 1, 1 << 16, out.micro_batches) || !field("chunks", 1, 1024, out.chunks))
    return false;
  const double most_s = trace_limits::kMaxMicroseconds * 1e-6;
  if (!j.contains("makespan") || !finite_number(j["makespan"], out.makespan) || out.makespan <= 0 ||
      out.makespan > most_s)
    return why = "'makespan' is not a number of seconds above 0", false;
  if (!j.contains("bubble") || !finite_number(j["bubble"], out.bubble) || out.bubble < 0 || out.bubble > 1)
    return why = "'bubble' is not a share from 0 to 1", false;
  if (!j.contains("actions") || !j["actions"].is_array()) return why = "'actions' is not a list", false;
  const auto& actions = j["actions"];
  const std::uint64_t most =
      std::min<std::uint64_t>(kMaxSimulatedActions, 3ull * std::uint64_t(out.stages) *
                                                        std::uint64_t(out.micro_batches) * std::uint64_t(out.chunks));
  if (actions.size() > most)
    return why = std::to_string(actions.size()) + " actions, more than " + std::to_string(most), false;
  const double late = out.makespan * (1 + 1e-9) + 1e-12;
  out.blocks.reserve(actions.size());
  for (std::size_t k = 0; k < actions.size(); ++k) {
    const auto& a = actions[k];
    const std::string at = "action " + std::to_string(k) + ": ";
    std::int64_t stage = 0, mb = 0, chunk = 0;
    double b = 0, e = 0;
    if (!a.is_array() || a.size() != 6) return why = at + "not [stage, op, micro-batch, chunk, begin, end]", false;
    if (!whole_in(a[0], 0, out.stages - 1, stage))
      return why = at + "stage not in 0.." + std::to_string(out.stages - 1), false;
    const std::optional<Pass> op =
        a[1].is_string() ? parse_pass_letter(a[1].get_ref<const std::string&>()) : std::nullopt;
    if (!op) return why = at + "op is not \"F\", \"B\" or \"W\"", false;
    if (!whole_in(a[2], 0, out.micro_batches - 1, mb))
      return why = at + "micro-batch not in 0.." + std::to_string(out.micro_batches - 1), false;
    if (!whole_in(a[3], 0, out.chunks - 1, chunk))
      return why = at + "chunk not in 0.." + std::to_string(out.chunks - 1), false;
    if (!finite_number(a[4], b) || !finite_number(a[5], e) || b < 0 || e < b || e > late)
      return why = at + "times are not 0 <= begin <= end <= makespan", false;
    out.blocks.push_back({int(stage), *op, int(mb), int(chunk), b, e});
  }
  std::sort(out.blocks.begin(), out.blocks.end(), [](const PipeBlock& x, const PipeBlock& y) {
    return x.stage != y.stage ? x.stage < y.stage : x.begin < y.begin;
  });
  std::vector<double> busy(std::size_t(out.stages), 0.0);
  for (const PipeBlock& k : out.blocks) busy[std::size_t(k.stage)] += k.end - k.begin;
  out.stage_idle.clear();
  for (double b : busy) out.stage_idle.push_back(unit_share(1 - b / out.makespan));
  return true;
}

SimulatedPipelines simulated_pipelines(const TraceData& d, const std::vector<std::string>& order) {
  SimulatedPipelines out;
  const std::string prefix = kPipelineSimulated;
  std::size_t left_out = 0;
  for (auto it = d.meta.lower_bound(prefix); it != d.meta.end() && it->first.starts_with(prefix); ++it) {
    const std::string name = printable(std::string_view(it->first).substr(prefix.size()), 40);
    if (out.runs.size() == kMaxPipelineSchedules) {
      ++left_out;
      continue;
    }
    SimulatedPipeline sim;
    std::string why;
    if (!parse_simulated_pipeline(it->second, sim, why)) {
      if (out.notes.size() < kMaxPipelineSchedules) out.notes.push_back(prefix + name + ": " + why);
      continue;
    }
    sim.schedule = name;
    out.runs.push_back(std::move(sim));
  }
  if (left_out)
    out.notes.push_back(std::to_string(left_out) + " more simulated timelines left out (the limit is " +
                        std::to_string(kMaxPipelineSchedules) + ")");
  auto rank = [&](const SimulatedPipeline& s) {
    return std::size_t(std::find(order.begin(), order.end(), s.schedule) - order.begin());
  };
  std::stable_sort(out.runs.begin(), out.runs.end(),
                   [&](const SimulatedPipeline& a, const SimulatedPipeline& b) { return rank(a) < rank(b); });
  return out;
}

}  // namespace dtl::viz
