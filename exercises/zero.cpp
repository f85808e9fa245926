// Exercises: the pieces of ZeRO / FSDP (exercises/zero.h).
//
// Implement them, then run the lab on your code and grade it:
//   cmake --build --preset student -j2
//   build/release/student/dtlab run zero --ranks 4
//   build/release/student/dtlab grade --exercise shard_range          # --hint 1, 2 or 3 when stuck
// The visualizer's timeline shows your reduce-scatters during backward and your all-gathers
// after the step (stage 3: before each unit's forward and backward) on each rank's comm stream.
#include "exercises/zero.h"

#include "exercises/reference/zero.h"  // generated (exercises/track/reference_copy.cmake)
#include "exercises/track/unwritten.h"

namespace dtl::ex {

ShardRange shard_range(std::size_t n, int rank, int world) {
  return reference_until_written("shard_range", ref::shard_range, n, rank, world);
}

Request reduce_scatter_gradients(Comm& comm, const GradBuffer& unit_grads, void* shard_grads, std::size_t chunk) {
  return reference_until_written("reduce_scatter_gradients", ref::reduce_scatter_gradients, comm, unit_grads,
                                 shard_grads, chunk);
}

ShardStep shard_step(const GradBuffer& unit_params, bool params_are_sharded, const void* shard_grads,
                     const ShardRange& shard) {
  return reference_until_written("shard_step", ref::shard_step, unit_params, params_are_sharded, shard_grads, shard);
}

Request all_gather_params(Comm& comm, const GradBuffer& unit_params, std::size_t chunk) {
  return reference_until_written("all_gather_params", ref::all_gather_params, comm, unit_params, chunk);
}

std::vector<int> units_to_gather(const std::vector<int>& order, int position, int depth,
                                 const std::vector<bool>& issued) {
  return reference_until_written("units_to_gather", ref::units_to_gather, order, position, depth, issued);
}

}  // namespace dtl::ex
