// The trace of a simulated step (cluster_sim.h) for a chosen subset of ranks, in the event
// schema of a real run (core/trace/event.h), written as Chrome JSON + .dtlt so dtlab-viz and
// Perfetto open it. The trace numbers its ranks 0..n−1; the meta "simulated_ranks" gives
// each one's global rank and (pp, dp, tp) coordinates (and cp, with context parallelism).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "labs/simulate/cluster_sim.h"
#include "labs/view_kind.h"

namespace dtl::sim {

inline constexpr int kMaxTraceRanks = 256;  // each traced rank costs two event logs

// The views dtlab-viz opens a simulated trace with: the pipeline (its schedule, as the
// pipeline lab's), the timeline, the topology when every rank is traced (the meta "grid"),
// the memory the planner gives each GPU, the report.
std::vector<ViewKind> simulated_trace_views(bool whole_grid);

// One pipeline across every stage (dp 0, cp 0, tp 0) plus the dp·cp group of rank 0 (up
// to kMaxTraceRanks in all), the pipeline first; every rank when the cluster has at most 64 GPUs.
std::vector<int> default_trace_ranks(const Workload& w);
// "default", "all", or a list of ranks and ranges ("0,8,16-23"); throws UsageError naming
// a rank that does not exist, or a subset larger than kMaxTraceRanks.
std::vector<int> parse_trace_ranks(std::string_view text, const Workload& w);

// What each GPU holds, from the planner (core/theory/plan.h): its model state, and what one
// micro-batch leaves on one layer until its backward frees it. The trace replays it as
// alloc/free events (model state from the start, a micro-batch's activations from the end
// of its F to the end of its B), so the memory view draws each stage's in-flight peak.
struct SimMemory {
  double params = 0, grads = 0, optimizer = 0, activation_per_layer = 0;
  double predicted_peak = 0;  // the planner's figure for the busiest GPU (the view's formula line)
  std::string predicted_text;
};

// Synchronous checkpoints between steps (`dtlab simulate --checkpoint-every K`): after every
// K-th step each rank writes its shard for write_s seconds (the whole checkpoint over the
// storage's aggregate bandwidth, every rank at once), and the next step starts after it.
struct SimCheckpoints {
  int every = 0;  // 0: none
  double write_s = 0;
};

// Writes `path` and `path`.dtlt: `steps` identical steps of every rank in `ranks` (and the
// checkpoint saves between them). A send whose receiver is traced gets its receive there (the
// learner steps through them); with every rank traced, the meta "grid" lets the topology view
// draw the dp × tp × pp grid.
void write_sim_trace(const Workload& w, const SimResult& r, const std::vector<int>& ranks, int steps,
                     const SimMemory& memory, const std::string& path, const std::map<std::string, std::string>& meta,
                     const SimCheckpoints& checkpoints = {});

}  // namespace dtl::sim
