// The trace of a simulated step (cluster_sim.h) for a chosen subset of ranks, in the event
// schema of a real run (core/trace/event.h), written as Chrome JSON + .dtlt so dtlab-viz and
// Perfetto open it. The trace numbers its ranks 0..n−1; the meta "simulated_ranks" gives
// each one's global rank and (pp, dp, tp) coordinates.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "labs/simulate/cluster_sim.h"

namespace dtl::sim {

inline constexpr int kMaxTraceRanks = 256;  // each traced rank costs two event logs

// One pipeline across every stage (dp 0, tp 0) plus the data-parallel group of rank 0 (up
// to kMaxTraceRanks in all), the pipeline first; every rank when the cluster has at most 64 GPUs.
std::vector<int> default_trace_ranks(const Workload& w);
// "default", "all", or a list of ranks and ranges ("0,8,16-23"); throws UsageError naming
// a rank that does not exist, or a subset larger than kMaxTraceRanks.
std::vector<int> parse_trace_ranks(std::string_view text, const Workload& w);

// Writes `path` and `path`.dtlt: `steps` identical steps of every rank in `ranks`.
void write_sim_trace(const Workload& w, const SimResult& r, const std::vector<int>& ranks, int steps,
                     const std::string& path, const std::map<std::string, std::string>& meta);

}  // namespace dtl::sim
