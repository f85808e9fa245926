#include "core/trace/run_breakdown.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"

namespace dtl {

Intervals merged_intervals(Intervals v) {
  std::sort(v.begin(), v.end());
  Intervals out;
  for (const auto& [b, e] : v) {
    if (!out.empty() && b <= out.back().second)
      out.back().second = std::max(out.back().second, e);
    else
      out.emplace_back(b, e);
  }
  return out;
}

std::int64_t intervals_total(const Intervals& v) {
  std::int64_t s = 0;
  for (const auto& [b, e] : v) s += e - b;
  return s;
}

// Both sorted and disjoint: a two-pointer sweep.
std::int64_t intervals_overlap(const Intervals& a, const Intervals& b) {
  std::int64_t s = 0;
  for (std::size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    s += std::max<std::int64_t>(0, std::min(a[i].second, b[j].second) - std::max(a[i].first, b[j].first));
    if (a[i].second < b[j].second)
      ++i;
    else
      ++j;
  }
  return s;
}

std::vector<bool> communication_streams(const TorchProfile& p, bool device) {
  std::vector<bool> comm(std::size_t(p.threads), true), any(std::size_t(p.threads), false);
  for (const ProfileSpan& s : p.spans) {
    if (s.device != device) continue;
    any[std::size_t(s.thread)] = true;
    if (s.role != ProfileRole::communication) comm[std::size_t(s.thread)] = false;
  }
  for (std::size_t t = 0; t < comm.size(); ++t) comm[t] = comm[t] && any[t];
  return comm;
}

// (Named, not anonymous: dtl_core is built in unity batches.)
namespace run_breakdown_impl {

// One rank's spans sorted into what the analysis needs (its own clock).
struct RankActivity {
  Intervals compute, comm;
  std::vector<ProfileSpan> collectives;  // outermost communication on communication streams, by begin
  std::int64_t first = 0, last = 0;
};

RankActivity activity(const TorchProfile& p, bool device) {
  const std::vector<bool> comm_stream = communication_streams(p, device);
  const bool has_comm_stream = std::find(comm_stream.begin(), comm_stream.end(), true) != comm_stream.end();
  RankActivity a;
  bool first = true;
  std::map<int, std::int64_t> open_until;  // per thread: the end of the last collective kept
  for (const ProfileSpan& s : p.spans) {   // sorted by begin, longest first
    if (s.device != device) continue;
    a.first = first ? s.begin_ns : std::min(a.first, s.begin_ns);
    a.last = first ? s.end_ns : std::max(a.last, s.end_ns);
    first = false;
    const bool on_comm_stream = comm_stream[std::size_t(s.thread)];
    if (s.role == ProfileRole::operation && !on_comm_stream) a.compute.emplace_back(s.begin_ns, s.end_ns);
    if (s.role != ProfileRole::communication) continue;
    a.comm.emplace_back(s.begin_ns, s.end_ns);
    // The collectives: the outermost spans of the communication streams, or of any thread
    // when the rank has none (a collective run on the thread that called it).
    if (on_comm_stream == has_comm_stream && s.begin_ns >= open_until[s.thread]) {
      a.collectives.push_back(s);
      open_until[s.thread] = s.end_ns;
    }
  }
  std::stable_sort(a.collectives.begin(), a.collectives.end(),
                   [](const ProfileSpan& x, const ProfileSpan& y) { return x.begin_ns < y.begin_ns; });
  a.compute = merged_intervals(std::move(a.compute));
  a.comm = merged_intervals(std::move(a.comm));
  return a;
}

// Sorts by distributedInfo.rank when every trace names one; checks the files make one run.
void order_by_rank(std::vector<TorchProfile>& profiles, bool whole_run) {
  if (profiles.empty()) throw UsageError("no traces given; pass each rank's torch.profiler trace (files or a folder)");
  const int n = int(profiles.size());
  const auto named = std::count_if(profiles.begin(), profiles.end(), [](const TorchProfile& p) { return p.rank >= 0; });
  if (named != 0 && named != n)
    throw UsageError("some traces name their rank (distributedInfo) and some do not; are they from one run?");
  for (const TorchProfile& p : profiles)
    if (whole_run && p.world > 0 && p.world != n)
      throw UsageError("'" + p.source + "' is rank " + std::to_string(p.rank) + " of a " + std::to_string(p.world) +
                       "-rank run but " + std::to_string(n) + " trace(s) were given; pass all " +
                       std::to_string(p.world) + " ranks' traces of that run (the files or their folder)");
  if (named == 0 || (!whole_run && n == 1)) return;  // the order given: the caller sorts names (rank2 < rank10)
  std::stable_sort(profiles.begin(), profiles.end(),
                   [](const TorchProfile& a, const TorchProfile& b) { return a.rank < b.rank; });
  for (int r = 0; r < n; ++r)
    if (profiles[std::size_t(r)].rank != r)
      throw UsageError("the traces' ranks are not 0.." + std::to_string(n - 1) + " (rank " +
                       std::to_string(profiles[std::size_t(r)].rank) + " in '" + profiles[std::size_t(r)].source +
                       "'); pass one trace per rank of one run");
}

std::int64_t median(std::vector<std::int64_t> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(v.size() / 2), v.end());
  return v[v.size() / 2];
}

void check_same_collectives(const std::vector<TorchProfile>& profiles, const std::vector<RankActivity>& acts) {
  for (std::size_t r = 1; r < acts.size(); ++r)
    if (acts[r].collectives.size() != acts[0].collectives.size())
      throw UsageError("'" + profiles[0].source + "' holds " + std::to_string(acts[0].collectives.size()) +
                       " collectives but '" + profiles[r].source + "' holds " +
                       std::to_string(acts[r].collectives.size()) +
                       "; the traces are not the same steps of one run (profile the same steps on every rank)");
}

// How well the clocks agree once aligned: the widest spread of one collective's ends.
double end_spread(const std::vector<RankActivity>& acts, const RunBreakdown& run) {
  std::int64_t widest = 0;
  for (std::size_t k = 0; k < acts[0].collectives.size(); ++k) {
    std::int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (std::size_t r = 0; r < acts.size(); ++r) {
      const std::int64_t end = acts[r].collectives[k].end_ns + run.ranks[r].offset_ns;
      lo = std::min(lo, end), hi = std::max(hi, end);
    }
    widest = std::max(widest, hi - lo);
  }
  return double(widest) * 1e-9;
}

// The critical path across ranks: who arrived last at each collective, who waited how long.
void attribute_waits(const std::vector<RankActivity>& acts, RunBreakdown& run) {
  for (std::size_t k = 0; k < acts[0].collectives.size(); ++k) {
    std::size_t last = 0;
    std::int64_t last_start = 0;
    for (std::size_t r = 0; r < acts.size(); ++r) {
      const std::int64_t start = acts[r].collectives[k].begin_ns + run.ranks[r].offset_ns;
      if (r == 0 || start > last_start) last = r, last_start = start;
    }
    ++run.ranks[last].arrived_last;
    for (std::size_t r = 0; r < acts.size(); ++r) {
      const ProfileSpan& c = acts[r].collectives[k];
      const std::int64_t wait =
          std::clamp<std::int64_t>(last_start - (c.begin_ns + run.ranks[r].offset_ns), 0, c.end_ns - c.begin_ns);
      run.ranks[r].waited_s += double(wait) * 1e-9;
      run.ranks[last].others_waited_s += double(wait) * 1e-9;
    }
  }
  double most = 0;
  for (const RankBreakdown& b : run.ranks)
    if (b.others_waited_s > most) most = b.others_waited_s, run.slowest_rank = b.rank;
}

}  // namespace run_breakdown_impl

namespace rb = run_breakdown_impl;

RunBreakdown analyze_run(std::vector<TorchProfile>& profiles, bool whole_run) {
  rb::order_by_rank(profiles, whole_run);
  RunBreakdown run;
  for (const TorchProfile& p : profiles)
    for (const ProfileSpan& s : p.spans) run.device_streams = run.device_streams || s.device;
  std::vector<rb::RankActivity> acts;
  for (const TorchProfile& p : profiles) acts.push_back(rb::activity(p, run.device_streams));
  rb::check_same_collectives(profiles, acts);
  if (whole_run && profiles.size() == 1 && !acts[0].collectives.empty())
    throw UsageError("'" + profiles[0].source + "' holds " + std::to_string(acts[0].collectives.size()) +
                     " collectives, so it is one rank of a run of several; pass every rank's trace (the files or "
                     "their folder)");
  run.collectives = int(acts[0].collectives.size());
  for (std::size_t r = 0; r < acts.size(); ++r) {
    const rb::RankActivity& a = acts[r];
    RankBreakdown b;
    b.rank = profiles[r].rank >= 0 ? profiles[r].rank : int(r);  // one rank alone keeps its number
    std::vector<std::int64_t> shifts;
    for (std::size_t k = 0; k < a.collectives.size(); ++k)
      shifts.push_back(acts[0].collectives[k].end_ns - a.collectives[k].end_ns);
    b.offset_ns = rb::median(std::move(shifts));
    b.window_s = double(a.last - a.first) * 1e-9;
    b.compute_s = double(intervals_total(a.compute)) * 1e-9;
    b.comm_s = double(intervals_total(a.comm)) * 1e-9;
    b.overlapped_s = double(intervals_overlap(a.compute, a.comm)) * 1e-9;
    b.exposed_s = b.comm_s - b.overlapped_s;
    b.idle_s = std::max(0.0, b.window_s - b.compute_s - b.exposed_s);
    b.collectives = int(a.collectives.size());
    run.ranks.push_back(b);
  }
  if (run.collectives > 0) rb::attribute_waits(acts, run);
  if (run.collectives > 0) run.end_spread_s = rb::end_spread(acts, run);
  return run;
}

std::string describe_run(const RunBreakdown& run) {
  std::string out = "measured from the traces (" + std::string(run.device_streams ? "GPU streams" : "CPU threads") +
                    "; annotations and ProfilerStep spans are containers, not compute):\n";
  char line[400];
  for (const RankBreakdown& b : run.ranks) {
    std::snprintf(line, sizeof line,
                  "rank %d: window %.3f ms = compute %.3f ms + exposed communication %.3f ms + idle %.3f ms; "
                  "communication %.3f ms, %.0f%% overlapped; waited %.3f ms in %d collectives, arrived last at %d\n",
                  b.rank, b.window_s * 1e3, b.compute_s * 1e3, b.exposed_s * 1e3, b.idle_s * 1e3, b.comm_s * 1e3,
                  b.comm_s > 0 ? 100 * b.overlapped_s / b.comm_s : 0.0, b.waited_s * 1e3, b.collectives,
                  b.arrived_last);
    out += line;
  }
  if (run.collectives > 0 && run.ranks.size() > 1) {
    std::snprintf(line, sizeof line,
                  "clocks aligned on the collectives' ends (median shift); one collective's ends still differ by up "
                  "to %.3f ms\n",
                  run.end_spread_s * 1e3);
    out += line;
  }
  if (run.collectives == 0 && run.ranks.size() > 1)
    out += "no collective in the traces: the ranks' clocks stay as recorded, and no rank waited on another\n";
  for (const RankBreakdown& s : run.ranks) {
    if (s.rank != run.slowest_rank) continue;
    std::snprintf(line, sizeof line,
                  "slowest rank: %d (last to reach %d of %d collectives; the other ranks waited %.3f ms for it)\n",
                  s.rank, s.arrived_last, run.collectives, s.others_waited_s * 1e3);
    out += line;
  }
  return out;
}

std::string run_json(const RunBreakdown& run) {
  nlohmann::json j;
  j["source"] = "measured";
  j["streams"] = run.device_streams ? "gpu" : "cpu_threads";
  j["collectives_per_rank"] = run.collectives;
  j["slowest_rank"] = run.slowest_rank;
  j["clock_end_spread_ms"] = run.end_spread_s * 1e3;
  for (const RankBreakdown& b : run.ranks)
    j["ranks"].push_back({{"rank", b.rank},
                          {"clock_offset_ms", double(b.offset_ns) * 1e-6},
                          {"window_ms", b.window_s * 1e3},
                          {"compute_ms", b.compute_s * 1e3},
                          {"communication_ms", b.comm_s * 1e3},
                          {"overlapped_ms", b.overlapped_s * 1e3},
                          {"exposed_communication_ms", b.exposed_s * 1e3},
                          {"idle_ms", b.idle_s * 1e3},
                          {"waited_ms", b.waited_s * 1e3},
                          {"arrived_last", b.arrived_last},
                          {"others_waited_ms", b.others_waited_s * 1e3}});
  return j.dump(1) + "\n";
}

}  // namespace dtl
