#include "viz/model/step_idle.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "core/trace/run_breakdown.h"

namespace dtl::viz {

double mean_idle(const BusyIndex& busy, int ranks, TimeRange window) {
  if (ranks <= 0 || window.end <= window.begin) return 0;
  double sum = 0;
  for (int r = 0; r < ranks; ++r) sum += busy.idle_fraction(r, window.begin, window.end);
  return sum / ranks;
}

const char* figure_kind(const TraceData& d) {
  const std::string* sim = d.meta_of(MetaKey::simulated);
  return sim && *sim == "true" ? "simulated" : "measured";
}

namespace {

bool is_action(Pass p) { return p == Pass::forward || p == Pass::backward || p == Pass::weight; }

// The extent of the first timed phase's name on every rank: one phase for a lab's run, a
// phase per step for a simulated trace (a lab's "all" runs other names after it).
std::optional<TimeRange> first_timed_run(const TraceData& d) {
  const Event* first = nullptr;
  std::optional<TimeRange> out;
  for (const Event& e : d.events) {
    if (e.kind != EventKind::phase || d.role(e).part != RunPart::timed) continue;
    if (!first) first = &e;
    if (e.label != first->label) continue;
    if (!out) out = TimeRange{e.begin_ns, e.end_ns};
    out->begin = std::min(out->begin, e.begin_ns), out->end = std::max(out->end, e.end_ns);
  }
  return out;
}

}  // namespace

std::vector<StepIdle> step_idle(const TraceData& d, const TraceIndex& x) {
  const std::optional<TimeRange> phase = first_timed_run(d);
  const int first_step = std::string(figure_kind(d)) == "measured" ? 1 : 0;  // a run's step 0 warms up
  std::map<int, std::vector<Intervals>> spans;                               // step → per rank, its actions
  for (const Event& e : d.events) {
    if (e.kind != EventKind::compute || e.step < first_step || !is_action(d.role(e).pass)) continue;
    if (phase && (e.begin_ns < phase->begin || e.begin_ns >= phase->end)) continue;
    if (e.rank < 0 || e.rank >= d.ranks) continue;
    auto& per_rank = spans[e.step];
    per_rank.resize(std::size_t(d.ranks));
    per_rank[std::size_t(e.rank)].push_back({e.begin_ns, e.end_ns});
  }
  std::vector<StepIdle> out;
  for (auto& [step, per_rank] : spans) {
    StepIdle s{step, {INT64_MAX, INT64_MIN}, 0, 0};
    std::int64_t busy = 0;
    for (Intervals& v : per_rank) {
      v = merged_intervals(std::move(v));  // (core/trace/run_breakdown.h: the analysis's own)
      if (v.empty()) continue;
      s.window.begin = std::min(s.window.begin, v.front().first),
      s.window.end = std::max(s.window.end, v.back().second);
      busy += intervals_total(v);
    }
    const double span = double(s.window.end - s.window.begin);
    s.idle = mean_idle(x.busy, d.ranks, s.window);
    s.actions_idle = span > 0 ? 1 - double(busy) / (double(d.ranks) * span) : 0;
    out.push_back(s);
  }
  return out;
}

double median_of_run_means(const std::vector<StepIdle>& steps, int runs, bool actions_only) {
  if (steps.empty()) return 0;
  if (runs <= 0 || std::size_t(runs) > steps.size()) runs = 1;
  const std::size_t per = steps.size() / std::size_t(runs);  // labs/measure.cpp run_means: whole runs only
  std::vector<double> means;
  for (std::size_t r = 0; r < std::size_t(runs); ++r) {
    double sum = 0;
    for (std::size_t i = r * per; i < (r + 1) * per; ++i) sum += actions_only ? steps[i].actions_idle : steps[i].idle;
    means.push_back(sum / double(per));
  }
  std::sort(means.begin(), means.end());
  const std::size_t n = means.size();
  return n % 2 ? means[n / 2] : (means[n / 2 - 1] + means[n / 2]) / 2;
}

namespace {

// The report's rows that are idle shares of a step: a pipeline's bubble ("<case>.bubble").
std::vector<nlohmann::json> bubble_rows(const TraceData& d) {
  std::vector<nlohmann::json> rows;
  const std::string* text = d.meta_of(MetaKey::report);
  if (!text) return rows;
  const nlohmann::json r = nlohmann::json::parse(*text, nullptr, false);
  if (r.is_discarded() || !r.is_object() || !r.contains("rows") || !r["rows"].is_array()) return rows;
  for (const nlohmann::json& row : r["rows"])
    if (row.is_object() && row.value("id", std::string()).ends_with(".bubble") && row.contains("measured") &&
        row["measured"].is_number())
      rows.push_back(row);
  return rows;
}

// The number of runs a report row aggregates (its spread's "runs"), or 0.
int runs_of(const nlohmann::json& row) {
  const auto s = row.find("spread");
  return s != row.end() && s->is_object() && (*s)["runs"].is_number_integer() ? (*s)["runs"].get<int>() : 0;
}

}  // namespace

std::string describe_step_idle(const TraceData& d, const TraceIndex& x) {
  const std::vector<StepIdle> steps = step_idle(d, x);
  std::string out = std::string("timeline idle (no compute on the rank, mean over ranks), ") + figure_kind(d) +
                    "; in brackets, counting only the forward/backward/W spans as work (what a bubble counts):\n";
  char line[320];
  for (const StepIdle& s : steps) {
    std::snprintf(line, sizeof line,
                  "  step %d: %.6f (%.6f) over %.3f ms, its first forward/backward/W span to its last\n", s.step,
                  s.idle, s.actions_idle, double(s.window.end - s.window.begin) / 1e6);
    out += line;
  }
  if (steps.empty()) return out + "  no step numbers on the trace's forward/backward spans\n";
  for (const nlohmann::json& row : bubble_rows(d)) {
    const int runs = runs_of(row);
    const double scale = row.value("unit", std::string()) == "%" ? 100 : 1, theirs = row["measured"].get<double>();
    const double mine = scale * median_of_run_means(steps, runs), only = scale * median_of_run_means(steps, runs, true);
    std::snprintf(line, sizeof line,
                  "  median of %d run means: %.6f (%.6f); the report's %s (%s): %.6f, difference %+.6f (%+.6f)\n",
                  std::max(1, runs), mine, only, row.value("id", std::string()).c_str(),
                  row.value("label", std::string()).c_str(), theirs, mine - theirs, only - theirs);
    out += line;
  }
  return out;
}

}  // namespace dtl::viz
