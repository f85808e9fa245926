#include "viz/model/torch_trace.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "core/error.h"
#include "core/trace/run_breakdown.h"
#include "core/trace/trace_limits.h"
#include "viz/model/text_fit.h"

namespace dtl::viz {

namespace {

// Labels: a profile's name ids mapped into the TraceData's table.
struct LabelTable {
  TraceData& t;
  std::map<std::string, std::uint16_t> ids;

  std::uint16_t id(const std::string& name) {
    auto it = ids.find(name);
    if (it != ids.end()) return it->second;
    if (t.labels.size() >= trace_limits::kMaxLabels)
      throw Error("torch profiler traces: more distinct names than the limit");
    t.labels.push_back(clip_text(name));  // (drawn: cut to what fits, text_fit.h)
    t.roles.emplace_back();
    return ids.emplace(name, std::uint16_t(t.labels.size() - 1)).first->second;
  }
};

// Whether each thread of p is a communication lane, among its CPU threads and GPU streams alike.
std::vector<bool> communication_lanes(const TorchProfile& p) {
  std::vector<bool> cpu = communication_streams(p, false), gpu = communication_streams(p, true);
  for (std::size_t t = 0; t < cpu.size(); ++t) cpu[t] = cpu[t] || gpu[t];
  return cpu;
}

// One rank's events, its clock moved by `offset_ns`.
void add_rank(TraceData& t, LabelTable& labels, const TorchProfile& p, int rank, std::int64_t offset_ns) {
  const std::vector<bool> comm_lane = communication_lanes(p);
  std::map<int, std::int64_t> busy_until;  // per thread: the end of the last work span kept
  for (const ProfileSpan& s : p.spans) {   // sorted by begin, longest first
    Event ev;
    ev.rank = rank;
    ev.begin_ns = s.begin_ns + offset_ns;
    ev.end_ns = s.end_ns + offset_ns;
    ev.stream = comm_lane[std::size_t(s.thread)] ? kStreamComm : kStreamMain;
    ev.label = labels.id(p.names[s.name]);
    if (s.role == ProfileRole::container) {
      ev.kind = EventKind::mark;
      ev.end_ns = ev.begin_ns;
    } else {
      auto& until = busy_until.try_emplace(s.thread, INT64_MIN).first->second;
      if (s.begin_ns < until) continue;  // inside a work span already kept
      until = s.end_ns;
      ev.kind = s.role == ProfileRole::communication ? EventKind::collective : EventKind::compute;
    }
    if (t.events.size() >= trace_limits::kMaxEvents) throw Error("torch profiler traces: more spans than the limit");
    t.events.push_back(ev);
  }
}

}  // namespace

bool looks_like_torch_trace(std::string_view head) { return looks_like_torch_profile(head); }

TraceData torch_run_trace(std::vector<TorchProfile> profiles) {
  std::vector<std::int64_t> offsets(profiles.size(), 0);
  if (profiles.size() > 1) {  // several files: one run, ordered and aligned
    const RunBreakdown run = analyze_run(profiles);
    for (std::size_t r = 0; r < profiles.size(); ++r) offsets[r] = run.ranks[r].offset_ns;
  }
  TraceData t;
  t.labels.push_back("");
  t.roles.emplace_back();
  LabelTable labels{t, {}};
  for (std::size_t r = 0; r < profiles.size(); ++r) {
    const TorchProfile& p = profiles[r];
    const int rank = profiles.size() == 1 && p.rank >= 0 ? p.rank : int(r);
    add_rank(t, labels, p, rank, offsets[r]);
    t.ranks = std::max({t.ranks, rank + 1, p.world});
  }
  std::stable_sort(t.events.begin(), t.events.end(), [](const Event& a, const Event& b) {
    return a.begin_ns != b.begin_ns ? a.begin_ns < b.begin_ns : a.rank < b.rank;
  });
  if (!t.events.empty()) {
    t.t_begin = t.events.front().begin_ns;
    for (const Event& e : t.events) t.t_end = std::max(t.t_end, e.end_ns);
  }
  t.meta[meta_key_name(MetaKey::source)] = "torch.profiler";
  return t;
}

TraceData parse_torch_trace(std::string_view json) { return torch_run_trace({parse_torch_profile(json)}); }

bool is_torch_run(const std::vector<std::string>& args) {
  std::error_code ec;
  return args.size() > 1 || (args.size() == 1 && std::filesystem::is_directory(args[0], ec));
}

TraceData load_torch_run_trace(const std::vector<std::string>& args) { return torch_run_trace(load_torch_run(args)); }

}  // namespace dtl::viz
