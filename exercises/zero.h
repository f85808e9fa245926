// The ZeRO exercise API: the pieces of ZeRO / FSDP that the ZeRO lab (labs/zero/) calls.
// Built from solutions/zero.cpp or your exercises/zero.cpp.
//
// ZeRO shards the model state of every sharding unit (one layer, or a few: --unit) over
// the N data-parallel ranks. A unit of n elements is padded to N·chunk elements with
// chunk = ceil(n / N); rank r owns elements [r·chunk, (r+1)·chunk) of the padded unit, of
// which those before n are real parameters and the rest padding. So every rank's piece has
// the same size, which is what reduce-scatter and all-gather need.
//
//   stage 1  optimizer state (fp32 master, m, v) of the shard only
//   stage 2  + gradients: each unit's gradients are reduce-scattered into the shard in backward
//   stage 3  + parameters: a unit's parameters are all-gathered before its forward and again
//            before its backward, into a gather buffer freed after use (FSDP)
#pragma once

#include <cstddef>
#include <vector>

#include "core/comm/comm.h"
#include "exercises/ddp.h"

namespace dtl::ex {

// Rank r's piece of a unit of n elements sharded over `world` ranks.
struct ShardRange {
  std::size_t chunk = 0;           // ceil(n / world): every rank's piece, padding included
  std::size_t begin = 0, end = 0;  // the real elements it owns, [begin, end) with end <= n (may be empty)
};

// Exercise 13: the shard of `rank` of `world` for a unit of n elements (n >= 1, world >= 1),
// as the layout above defines it: every rank's chunk has the same size, the chunks cover
// the padded unit in rank order, and [begin, end) are the real elements inside this
// rank's chunk (empty when the chunk is all padding; never past n).
ShardRange shard_range(std::size_t n, int rank, int world);

// Exercise 14: ZeRO-2's gradient reduction. In: `unit_grads`, this rank's gradients of a
// unit, padded to comm.size()·chunk elements (padding zero). Out: once the returned Request
// completes, `shard_grads` (chunk elements of the same dtype) holds the average over all
// ranks of this rank's chunk — and nothing else is needed by anyone: each rank owns only
// its chunk, so the reduction must move no more than (N-1)/N of the unit per rank, half
// of what every rank receiving every gradient would cost. The function must return without
// waiting: backward goes on while the reduction runs.
Request reduce_scatter_gradients(Comm& comm, const GradBuffer& unit_grads, void* shard_grads, std::size_t chunk);

// What one rank's optimizer steps for one unit: `count` elements of the unit's parameters
// starting at `params`, with their gradients at `grads`.
struct ShardStep {
  void* params = nullptr;
  const void* grads = nullptr;
  std::size_t count = 0;
};

// Exercise 15: the optimizer step on the shard. The unit's parameters are the padded unit
// buffer `unit_params` (stages 1 and 2 hold every parameter) or only this rank's chunk
// (stage 3: params_are_sharded); `shard_grads` holds this rank's chunk of averaged
// gradients. Return the slice the optimizer must update: the real elements this rank owns
// (never the padding), its parameters and their gradients.
ShardStep shard_step(const GradBuffer& unit_params, bool params_are_sharded, const void* shard_grads,
                     const ShardRange& shard);

// Exercise 16: after the step every rank needs every parameter again (stages 1 and 2).
// In: `unit_params`, the padded unit (comm.size()·chunk elements) of which this rank has
// just updated only its own chunk (chunk comm.rank()). Out: once the returned Request
// completes, every chunk of `unit_params` holds its owner's updated values, on every rank;
// no extra buffer, and each rank sends only what it owns. Return without waiting.
Request all_gather_params(Comm& comm, const GradBuffer& unit_params, std::size_t chunk);

// Exercise 17: stage 3's prefetch. Units compute in `order` (forward: 0, 1, ..; backward:
// the reverse). Before computing order[position], a rank must have issued the all-gather of
// that unit and, with prefetch depth d, of the next d units in the order (fewer at the end),
// so their gathers run while this one computes; depth 0 gathers only the unit about to
// compute. issued[u] says whether unit u's gather is already in flight or done in this
// pass. Return the units to issue now, in compute order, none issued twice.
std::vector<int> units_to_gather(const std::vector<int>& order, int position, int depth,
                                 const std::vector<bool>& issued);

}  // namespace dtl::ex
