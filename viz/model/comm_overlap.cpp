#include "viz/model/comm_overlap.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <utility>

#include "core/error.h"
#include "core/trace/run_breakdown.h"
#include "core/util/files.h"
#include "viz/model/torch_trace.h"

namespace dtl::viz {

namespace {

// Spans as intervals, merged, totalled and overlapped by core/trace/run_breakdown.h's functions
// (the ones `dtlab analyze` uses).
bool is_comm(EventKind k) { return k == EventKind::collective || k == EventKind::send || k == EventKind::recv; }

}  // namespace

std::vector<RankOverlap> comm_overlap(const TraceData& t) {
  std::vector<Intervals> compute(std::size_t(std::max(0, t.ranks))), comm(compute.size());
  for (const Event& e : t.events) {
    if (e.rank < 0 || std::size_t(e.rank) >= compute.size() || e.end_ns <= e.begin_ns) continue;
    if (e.kind == EventKind::compute)
      compute[std::size_t(e.rank)].emplace_back(e.begin_ns, e.end_ns);
    else if (is_comm(e.kind))
      comm[std::size_t(e.rank)].emplace_back(e.begin_ns, e.end_ns);
  }
  std::vector<RankOverlap> out;
  for (std::size_t r = 0; r < compute.size(); ++r) {
    const Intervals c = merged_intervals(std::move(compute[r])), m = merged_intervals(std::move(comm[r]));
    RankOverlap o;
    o.rank = int(r);
    o.compute_s = double(intervals_total(c)) * 1e-9;
    o.comm_s = double(intervals_total(m)) * 1e-9;
    o.overlapped_s = double(intervals_overlap(c, m)) * 1e-9;
    o.exposed_s = o.comm_s - o.overlapped_s;
    out.push_back(o);
  }
  return out;
}

std::string describe_overlap(const std::vector<RankOverlap>& ranks) {
  std::string out;
  for (const RankOverlap& o : ranks) {
    char line[200];
    std::snprintf(line, sizeof line,
                  "rank %d: compute %.3f ms, communication %.3f ms, overlapped %.3f ms (%.0f%%), exposed %.3f ms\n",
                  o.rank, o.compute_s * 1e3, o.comm_s * 1e3, o.overlapped_s * 1e3,
                  o.comm_s > 0 ? 100 * o.overlapped_s / o.comm_s : 0.0, o.exposed_s * 1e3);
    out += line;
  }
  return out;
}

namespace {

bool names_torch_traces(const std::vector<std::string>& paths) {
  if (is_torch_run(paths)) return true;
  require_readable_file(paths.at(0), "the trace", UINTMAX_MAX);  // a pipe would block the read below
  std::ifstream in(paths.at(0), std::ios::binary);
  std::string head(4096, '\0');
  in.read(head.data(), std::streamsize(head.size()));
  head.resize(std::size_t(std::max<std::streamsize>(0, in.gcount())));
  return looks_like_torch_trace(head);
}

}  // namespace

std::string describe_overlap_of(const std::vector<std::string>& paths) {
  if (paths.empty()) throw UsageError("--overlap needs a trace file (or the per-rank torch.profiler traces of a run)");
  if (!names_torch_traces(paths)) return describe_overlap(comm_overlap(load_trace(paths[0])));
  std::vector<TorchProfile> profiles = load_torch_run(paths);
  return describe_run(analyze_run(profiles, /*whole_run=*/false));  // the viewer may show one rank alone
}

}  // namespace dtl::viz
