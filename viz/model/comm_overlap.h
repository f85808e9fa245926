// How much of each rank's communication its computation hides, from a trace's events
// (dtlab's, or a PyTorch profiler's as torch_trace.h maps it): per rank, the time covered by
// compute spans, by communication spans (collectives, sends, receives), by both at once
// (overlapped), and communication with no compute beside it (exposed = communication −
// overlapped). Times are unions of intervals, so nested or concurrent spans count once.
// For torch.profiler traces --overlap prints the run analysis instead (describe_overlap_of).
#pragma once

#include <string>
#include <vector>

#include "viz/model/trace_data.h"

namespace dtl::viz {

struct RankOverlap {
  int rank = 0;
  double compute_s = 0, comm_s = 0, overlapped_s = 0, exposed_s = 0;
};

std::vector<RankOverlap> comm_overlap(const TraceData& t);

// One line per rank: "rank 0: compute 12.3 ms, communication 4.5 ms, overlapped 1.2 ms
// (27%), exposed 3.3 ms".
std::string describe_overlap(const std::vector<RankOverlap>& ranks);

// dtlab-viz --overlap: for torch.profiler traces (one file, several, or a folder) the run
// analysis of core/trace/run_breakdown.h, the text `dtlab analyze` prints; for a dtlab
// trace the figures above.
std::string describe_overlap_of(const std::vector<std::string>& paths);

}  // namespace dtl::viz
