#include "viz/views/pipeline/pipeline_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>
#include <unordered_map>

#include "core/theory/schedule.h"
#include "core/trace/trace_limits.h"

namespace dtl::viz {

namespace {

constexpr std::uint32_t kNoPhase = 0x10000;  // a key beyond every uint16 label id
constexpr std::size_t kMaxBubbleRows = 64;

// An action's slot in a stage's counts, by its label's role: F 0, B 1, W 2; -1: not an action.
int action_slot(const Role& role) {
  if (role.block >= 0) return -1;  // a layer's span inside an action (a simulated trace's), not one itself
  if (!pipeline::is_action_pass(role.pass)) return -1;
  static_assert(int(Pass::backward) == int(Pass::forward) + 1 && int(Pass::weight) == int(Pass::forward) + 2);
  return int(role.pass) - int(Pass::forward);
}

struct PhaseSpan {
  std::int64_t begin, end;
  std::uint16_t label;
};

// A new run for the phase `key` (a label id, or kNoPhase: the meta's --schedule).
PipelineRun new_run(const TraceData& d, std::uint32_t key) {
  PipelineRun r;
  if (key != kNoPhase)
    r.kind = d.role(std::uint16_t(key)).schedule;
  else if (const std::string* s = d.meta_of(MetaKey::schedule))
    r.kind = parse_schedule_kind(*s);  // a live run's own
  if (r.kind)
    r.schedule = schedule_kind_name(*r.kind);
  else if (key != kNoPhase)
    r.schedule = printable(d.label(std::uint16_t(key)), 40);
  if (r.schedule.empty()) r.schedule = "pipeline";
  return r;
}

// Each action to its schedule: the innermost phase around it on its rank (a schedule's
// phase wins), looking back over a few phases only, so a hostile trace's nesting costs nothing.
// Only the ranks that draw a stage count.
void assign_actions(const TraceData& d, const std::vector<std::int8_t>& op_of_label, const PipelineStages& st,
                    PipelineRuns& out) {
  const std::size_t P = std::size_t(std::max(0, d.ranks));
  std::vector<std::vector<PhaseSpan>> phases(P);  // per rank, by begin (events are sorted by begin)
  for (const Event& e : d.events)
    if (e.kind == EventKind::phase && e.rank >= 0 && std::size_t(e.rank) < P)
      phases[std::size_t(e.rank)].push_back({e.begin_ns, e.end_ns, e.label});
  std::unordered_map<std::uint32_t, int> run_of_key;  // phase label (or kNoPhase) → run, -1: dropped
  for (std::size_t i = 0; i < d.events.size(); ++i) {
    const Event& e = d.events[i];
    const bool action = e.kind == EventKind::compute && e.stream == kStreamMain && e.label < op_of_label.size() &&
                        op_of_label[e.label] >= 0 && e.rank >= 0 && std::size_t(e.rank) < P &&
                        st.of_rank[std::size_t(e.rank)] >= 0;
    if (!action) continue;
    const auto& ps = phases[std::size_t(e.rank)];
    auto it = std::upper_bound(ps.begin(), ps.end(), e.begin_ns,
                               [](std::int64_t t, const PhaseSpan& p) { return t < p.begin; });
    std::uint32_t key = kNoPhase;
    for (int k = 0; it != ps.begin() && k < 16; ++k) {
      --it;
      if (it->end < e.end_ns) continue;
      if (key == kNoPhase) key = it->label;
      if (d.role(it->label).schedule) {
        key = it->label;
        break;
      }
    }
    auto [slot, fresh] = run_of_key.try_emplace(key, -1);
    if (fresh) {
      if (out.runs.size() == kMaxPipelineSchedules) {
        ++out.dropped;
        continue;
      }
      slot->second = int(out.runs.size());
      out.runs.push_back(new_run(d, key));
      out.runs.back().stages = st;
    }
    if (slot->second >= 0) out.runs[std::size_t(slot->second)].actions.push_back(i);
  }
}

// Steps: a step is complete when every stage ran the fullest stage's count of F, as many
// B, and at most as many W (zero-bubble splits every B into B and W, DualPipeV only its
// cool-down's later half).
void find_steps(const TraceData& d, const std::vector<std::int8_t>& op_of_label, PipelineRun& r) {
  const std::size_t P = std::size_t(r.stages.count);
  const auto stage = [&](const Event& e) { return r.stages.of_rank[std::size_t(e.rank)]; };
  std::stable_sort(r.actions.begin(), r.actions.end(), [&](std::size_t a, std::size_t b) {
    const Event &x = d.events[a], &y = d.events[b];
    return x.step != y.step ? x.step < y.step : stage(x) < stage(y);  // (stable: by begin within a stage)
  });
  struct Count {
    int step, stage;
    std::array<std::int64_t, 3> ops;
  };
  std::vector<Count> counts;
  std::int64_t fullest = 0;
  for (std::size_t i : r.actions) {
    const Event& e = d.events[i];
    if (counts.empty() || counts.back().step != e.step || counts.back().stage != stage(e))
      counts.push_back({e.step, stage(e), {}});
    // 0, 1 or 2: assign_actions kept F, B and W only (so the byte reads the same unsigned)
    const auto slot = static_cast<std::uint8_t>(op_of_label[e.label]);
    fullest = std::max(fullest, ++counts.back().ops[slot]);
  }
  std::size_t a = 0;  // walks r.actions beside counts
  for (std::size_t c = 0; c < counts.size();) {
    PipeStepRange s{counts[c].step, 0, 0, true};
    std::size_t stages = 0;
    bool first = true;
    for (; c < counts.size() && counts[c].step == s.step; ++c, ++stages) {
      const auto& n = counts[c].ops;
      s.complete = s.complete && n[0] == fullest && n[1] == fullest && n[2] <= fullest;
    }
    for (; a < r.actions.size() && d.events[r.actions[a]].step == s.step; ++a) {
      const Event& e = d.events[r.actions[a]];
      s.begin_ns = first ? e.begin_ns : std::min(s.begin_ns, e.begin_ns);
      s.end_ns = first ? e.end_ns : std::max(s.end_ns, e.end_ns);
      first = false;
    }
    s.complete = s.complete && stages == P;
    if (s.complete) r.last_complete = s.step;
    r.steps.push_back(s);
  }
}

}  // namespace

const PipelineRun* PipelineRuns::find(std::string_view schedule) const {
  for (const PipelineRun& r : runs)
    if (r.schedule == schedule) return &r;
  return nullptr;
}

const PipelineRun* PipelineRuns::find(ScheduleKind kind) const {
  for (const PipelineRun& r : runs)
    if (r.kind == kind) return &r;
  return nullptr;
}

PipelineStages pipeline_stages(const TraceData& d) {
  PipelineStages st;
  const int P = std::max(0, d.ranks);
  st.of_rank.assign(std::size_t(P), -1);
  // The coordinates of each trace rank: a simulated trace's own list, else the grid's layout
  // rank = pp·(dp·tp) + dp·tp + tp, else none (every rank a stage).
  std::vector<std::array<long, 3>> coord(std::size_t(P), {-1, -1, -1});  // (pp, dp, tp)
  if (const std::string* who = d.meta_of(MetaKey::simulated_ranks)) {
    const nlohmann::json j = nlohmann::json::parse(*who, nullptr, false);
    auto whole = [](const nlohmann::json& o, const char* k) {
      const auto it = o.find(k);
      return it != o.end() && it->is_number_integer() && it->get<long>() >= 0 ? it->get<long>() : -1L;
    };
    if (j.is_array())
      for (const nlohmann::json& e : j)
        if (e.is_object() && whole(e, "trace_rank") >= 0 && whole(e, "trace_rank") < P)
          coord[std::size_t(whole(e, "trace_rank"))] = {whole(e, "pp"), whole(e, "dp"), whole(e, "tp")};
  } else if (const std::string* grid = d.meta_of(MetaKey::grid)) {
    const nlohmann::json g = nlohmann::json::parse(*grid, nullptr, false);
    auto axis = [&](const char* k) {  // each within the ranks, so the product cannot overflow
      const long v = g.is_object() && g.contains(k) && g[k].is_number_integer() ? g[k].get<long>() : 0L;
      return v >= 1 && v <= P ? v : 0L;
    };
    const long dp = axis("dp"), tp = axis("tp"), pp = axis("pp");
    if (dp >= 1 && tp >= 1 && pp >= 1 && dp * tp * pp == P)
      for (long r = 0; r < P; ++r) coord[std::size_t(r)] = {r / (dp * tp), (r / tp) % dp, r % tp};
  }
  const bool grid = std::any_of(coord.begin(), coord.end(), [](const auto& c) { return c[0] >= 0; });
  for (int r = 0; r < P; ++r) {
    const auto& c = coord[std::size_t(r)];
    if (!grid)
      st.of_rank[std::size_t(r)] = r;
    else if (c[1] == 0 && c[2] == 0 && c[0] >= 0 && c[0] < P)
      st.of_rank[std::size_t(r)] = int(c[0]);
  }
  for (int s : st.of_rank) st.count = std::max(st.count, s + 1);
  return st;
}

PipelineRuns pipeline_runs(const TraceData& d) {
  PipelineRuns out;
  std::vector<std::int8_t> op_of_label(d.labels.size(), -1);
  for (std::size_t id = 1; id < d.labels.size(); ++id)
    op_of_label[id] = std::int8_t(action_slot(d.role(std::uint16_t(id))));
  assign_actions(d, op_of_label, pipeline_stages(d), out);
  for (PipelineRun& r : out.runs) find_steps(d, op_of_label, r);
  return out;
}

std::map<std::string, BubbleRow> report_bubbles(const TraceData& d) {
  std::map<std::string, BubbleRow> out;
  const std::string* report = d.meta_of(MetaKey::report);
  if (!report) return out;
  const nlohmann::json r = nlohmann::json::parse(*report, nullptr, false);
  if (!r.is_object() || !r.contains("rows") || !r["rows"].is_array()) return out;
  const std::string suffix = ".bubble";
  for (const auto& row : r["rows"]) {
    if (out.size() == kMaxBubbleRows) break;
    if (!row.is_object() || !row.contains("id") || !row["id"].is_string()) continue;
    const std::string& id = row["id"].get_ref<const std::string&>();
    if (id.size() <= suffix.size() || !id.ends_with(suffix)) continue;
    BubbleRow b;
    auto number = [&](const char* key) {
      if (!row.contains(key) || !row[key].is_number()) return -1.0;
      const double v = row[key].get<double>();
      return std::isfinite(v) && v >= 0 && v <= 1 ? v : -1.0;
    };
    b.measured = number("measured");
    b.predicted = number("predicted");
    if (row.contains("source") && row["source"].is_string())
      b.source = printable(row["source"].get_ref<const std::string&>(), 40);
    if (row.contains("provenance") && row["provenance"].is_string())
      b.provenance = parse_provenance(row["provenance"].get_ref<const std::string&>()).value_or(Provenance::formula);
    out[printable(id.substr(0, id.size() - suffix.size()), 40)] = b;
  }
  return out;
}

int pipeline_step_at(const PipelineRun& run, std::int64_t t) {
  for (const PipeStepRange& s : run.steps)
    if (s.begin_ns <= t && t <= s.end_ns) return s.step;
  return -1;
}

PipelineStep pipeline_step(const TraceData& d, const PipelineRun& run, int step) {
  PipelineStep out;
  out.schedule = run.schedule;
  const std::size_t P = std::size_t(run.stages.count);
  out.stages = int(P);
  auto has = [&](int s) {
    return std::any_of(run.steps.begin(), run.steps.end(), [&](const PipeStepRange& r) { return r.step == s; });
  };
  if (step < 0 || !has(step))
    step = run.last_complete >= 0 ? run.last_complete : run.steps.empty() ? -1 : run.steps.back().step;
  if (step < 0 && run.steps.empty()) return out;
  const auto range =
      std::find_if(run.steps.begin(), run.steps.end(), [&](const PipeStepRange& r) { return r.step == step; });
  if (range == run.steps.end()) return out;
  out.step = step;
  out.complete = range->complete;
  out.begin_ns = range->begin_ns, out.end_ns = range->end_ns;
  struct ByStep {  // run.actions is sorted by step
    const TraceData& d;
    bool operator()(std::size_t i, int s) const { return d.events[i].step < s; }
    bool operator()(int s, std::size_t i) const { return s < d.events[i].step; }
  };
  const auto [b, e] = std::equal_range(run.actions.begin(), run.actions.end(), step, ByStep{d});
  std::vector<double> busy(P, 0.0);
  double total = 0;
  for (auto it = b; it != e; ++it) {
    const Event& ev = d.events[*it];
    PipeBlock k;
    k.stage = run.stages.of_rank[std::size_t(ev.rank)];
    k.op = d.role(ev).pass;
    k.micro_batch = std::max<int>(0, ev.micro_batch);
    k.chunk = std::clamp<int>(ev.chunk, 0, trace_limits::kMaxChunks);
    k.begin = double(ev.begin_ns - out.begin_ns) * 1e-9;
    k.end = double(ev.end_ns - out.begin_ns) * 1e-9;
    out.micro_batches = std::max(out.micro_batches, k.micro_batch + 1);
    out.chunks = std::max(out.chunks, k.chunk + 1);
    const double dur = double(ev.end_ns - ev.begin_ns);
    busy[std::size_t(k.stage)] += dur, total += dur;
    out.blocks.push_back(k);
  }
  // M is the run's, not the micro-batches seen so far (a live step in progress showed M = 4 of 8).
  out.micro_batches =
      std::max(out.micro_batches, std::clamp(d.meta_int(meta_key_name(MetaKey::micro_batches), 0), 0, 1 << 16));
  const double span = double(out.end_ns - out.begin_ns);
  out.stage_idle.resize(P, 0.0);
  for (std::size_t s = 0; s < P && span > 0; ++s) out.stage_idle[s] = unit_share(1 - busy[s] / span);
  out.bubble = span > 0 && P > 0 ? unit_share(1 - total / (double(P) * span)) : 0.0;
  return out;
}

int block_direction(const PipeBlock& k, std::string_view schedule, int stages, int chunks) {
  if (k.op == Pass::weight || stages < 2 || chunks < 1 || k.chunk < 0 || k.chunk >= chunks) return 0;
  const std::optional<ScheduleKind> kind = parse_schedule_kind(schedule);
  pipeline::Schedule placement;  // (only the configuration: where each virtual stage sits)
  placement.config.stages = stages, placement.config.chunks = chunks;
  const bool vee = kind && (*kind == ScheduleKind::zb_v || *kind == ScheduleKind::dualpipe_v) && chunks == 2;
  placement.config.placement = vee ? pipeline::Placement::vee : pipeline::Placement::loop;
  const int vs = placement.virtual_stage(k.stage, k.chunk), to = k.op == Pass::forward ? vs + 1 : vs - 1;
  if (to < 0 || to >= placement.virtual_stages()) return 0;
  const int stage = placement.stage_of(to);
  return stage > k.stage ? 1 : stage < k.stage ? -1 : 0;
}

std::vector<BlockRole> block_roles(const std::vector<PipeBlock>& blocks) {
  std::set<std::tuple<int, int, int>> weights;  // (stage, micro-batch, chunk) of every W
  for (const PipeBlock& k : blocks)
    if (k.op == Pass::weight) weights.insert({k.stage, k.micro_batch, k.chunk});
  std::vector<BlockRole> roles;
  roles.reserve(blocks.size());
  for (const PipeBlock& k : blocks) {
    if (k.op == Pass::forward)
      roles.push_back(BlockRole::forward);
    else if (k.op == Pass::weight)
      roles.push_back(BlockRole::weight_grad);
    else
      roles.push_back(weights.count({k.stage, k.micro_batch, k.chunk}) ? BlockRole::input_grad : BlockRole::backward);
  }
  return roles;
}

bool has_weight_blocks(const std::vector<PipeBlock>& blocks) {
  return std::any_of(blocks.begin(), blocks.end(), [](const PipeBlock& k) { return k.op == Pass::weight; });
}

const char* role_name(BlockRole r) {
  switch (r) {
    case BlockRole::forward: return "forward (F)";
    case BlockRole::backward: return "full backward (B: input and weight grads)";
    case BlockRole::input_grad: return "input grad only (I, the zero-bubble split)";
    case BlockRole::weight_grad: return "weight grad (W)";
  }
  return "?";
}

}  // namespace dtl::viz
