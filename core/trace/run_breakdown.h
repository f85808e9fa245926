// The analysis of one PyTorch run from its ranks' torch.profiler traces, in the spirit of
// Holistic Trace Analysis (HTA's temporal breakdown and comm/comp overlap): per rank, how
// its time splits into compute, communication that no compute hides (exposed) and idle, and
// across ranks which rank the others waited on. `dtlab analyze` and the viewer's --overlap
// print this one computation.
//
// What counts as what (core/trace/torch_profile.h gives each span its role):
//   - the rank's streams: with GPU spans in the trace, its GPU streams; otherwise its CPU
//     threads. A thread or stream whose spans are all communication is a communication
//     stream (gloo's worker threads, NCCL's stream); the others are compute streams.
//   - compute: the union of the operation spans on compute streams. Containers
//     (record_function annotations, ProfilerStep#N) never count, so a wait inside the
//     user's train_step is not compute.
//   - communication: the union of communication spans; overlapped: its intersection with
//     compute; exposed = communication - overlapped.
//   - idle = window - |compute U communication|, the window being the rank's first to last span.
//
// Clocks: each collective ends on every rank at about the same moment (an all-reduce
// returns only once every rank's data is in), so rank r's offset is the median over the
// collectives of (end on rank 0 - end on rank r). This aligns the legacy layout, whose
// clock starts at each rank's profiler start, and different hosts' clocks alike.
//
// Waiting (a simple critical path across ranks): the k-th collective of every rank is one
// collective; the rank whose k-th collective starts last (aligned clocks) arrived last,
// and each other rank waited min(last start - its start, its collective's duration).
#pragma once

#include <string>
#include <vector>

#include "core/trace/torch_profile.h"

namespace dtl {

struct RankBreakdown {
  int rank = 0;
  std::int64_t offset_ns = 0;  // added to this rank's clock to align it with rank 0's
  double window_s = 0, compute_s = 0, comm_s = 0, overlapped_s = 0, exposed_s = 0, idle_s = 0;
  int collectives = 0;
  double waited_s = 0;         // in collectives, for the last rank to arrive
  int arrived_last = 0;        // collectives this rank reached last
  double others_waited_s = 0;  // the other ranks' waits for this rank, summed
};

struct RunBreakdown {
  std::vector<RankBreakdown> ranks;  // by rank
  int slowest_rank = -1;             // the rank the others waited on most (-1: no collectives)
  int collectives = 0;               // per rank
  double end_spread_s = 0;           // the alignment's residue: the widest spread of one collective's aligned ends
  bool device_streams = false;       // GPU streams decided compute and communication
};

// Orders the profiles by rank: distributedInfo.rank when every trace has it, else the order
// given. Throws dtl::UsageError (saying what to do) when they cannot be one run: a rank twice,
// different numbers of collectives, and with `whole_run` a world_size that differs from the
// files given or one legacy trace that holds collectives (one rank of several; the viewer,
// which may show one rank alone, passes false).
RunBreakdown analyze_run(std::vector<TorchProfile>& profiles, bool whole_run = true);

// One line per rank and the waits, in milliseconds, labelled "measured".
std::string describe_run(const RunBreakdown& run);
std::string run_json(const RunBreakdown& run);

// Per thread (TorchProfile::threads) of p: whether it is a communication stream, among the
// GPU streams' spans (device) or the CPU threads' ones.
std::vector<bool> communication_streams(const TorchProfile& p, bool device);

// The analysis's intervals (sorted, disjoint), for the viewer's lanes and tests.
using Intervals = std::vector<std::pair<std::int64_t, std::int64_t>>;
Intervals merged_intervals(Intervals v);
std::int64_t intervals_total(const Intervals& v);
std::int64_t intervals_overlap(const Intervals& a, const Intervals& b);

}  // namespace dtl
