// Inside the NCCL backend (see core/comm/nccl_backend.h): one rank's state, shared by its
// Comm, the groups split from it and their requests; and the Comm itself.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "core/comm/comm.h"
#include "core/comm/threads_backend.h"  // FaultPlan

namespace dtl::nccl {

struct RankState {
  int world_rank = 0;
  int device = 0;                 // the GPU this rank drives
  cudaStream_t stream = nullptr;  // every NCCL call and staging copy of this rank
  Trace* trace = nullptr;
  FaultPlan faults;
  int sends_posted = 0;
  int collectives_posted = 0;  // FaultPlan steps, when the plan counts collectives
  double timeout_s = 60;
  // One process: the first rank that failed, or -1 (its peers abort their waits).
  const std::atomic<int>* world_failed = nullptr;
  // Device clock → trace clock: `anchor` was recorded on the stream and completed at host
  // time anchor_ns; an event's device time is anchor_ns + (event - anchor).
  cudaEvent_t anchor = nullptr;
  std::int64_t anchor_ns = 0;
  // Messages so far per (source, destination) global pair: both sides count the same
  // sequence, so they derive the same flow id without talking.
  std::map<std::pair<int, int>, std::uint64_t> messages;

  void start(int gpu, Trace* tr);  // selects the GPU, creates the stream, records the anchor
  void stop() noexcept;
  std::int64_t host_ns(cudaEvent_t e) const;
};

// The world Comm of `comm` (ranks in their NCCL order = global ranks). Owns the ncclComm_t:
// destroys it at the end, or aborts it if an operation failed.
std::unique_ptr<Comm> make_world_comm(ncclComm_t comm, RankState& state);

// Aborts a communicator this rank failed in (ncclCommAbort), so peers blocked in NCCL with
// it see an error instead of waiting forever. Safe to call more than once.
void abort_world(Comm& world) noexcept;

}  // namespace dtl::nccl
