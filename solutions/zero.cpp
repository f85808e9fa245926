// Reference solutions of the ZeRO exercises (exercises/zero.h).
#include "exercises/zero.h"

#include <algorithm>

namespace dtl::ex {

ShardRange shard_range(std::size_t n, int rank, int world) {
  const std::size_t chunk = (n + std::size_t(world) - 1) / std::size_t(world);  // chunk = ceil(n / N)
  // Rank r's piece of the padded unit is [r·chunk, (r+1)·chunk); only what lies before n is real.
  return {chunk, std::min(std::size_t(rank) * chunk, n), std::min(std::size_t(rank + 1) * chunk, n)};
}

Request reduce_scatter_gradients(Comm& comm, const GradBuffer& unit_grads, void* shard_grads, std::size_t chunk) {
  // The input holds N·chunk elements; rank r keeps block r, averaged (ZeRO-2's gradient sharding).
  return comm.ireduce_scatter(unit_grads.data, shard_grads, chunk, unit_grads.dtype, ReduceOp::avg);
}

ShardStep shard_step(const GradBuffer& unit_params, bool params_are_sharded, const void* shard_grads,
                     const ShardRange& shard) {
  // Stage 3 holds only this rank's chunk, which starts at its first owned element; stages 1
  // and 2 hold the whole padded unit. The gradients are the shard's, from its start too.
  void* params = params_are_sharded ? unit_params.data : unit_params.at(shard.begin);
  return {params, shard_grads, shard.end - shard.begin};  // the real elements only, never the padding
}

Request all_gather_params(Comm& comm, const GradBuffer& unit_params, std::size_t chunk) {
  // In place: this rank's block r·chunk .. (r+1)·chunk is the input, the padded unit the output.
  return comm.iall_gather(unit_params.at(std::size_t(comm.rank()) * chunk), unit_params.data, chunk, unit_params.dtype);
}

std::vector<int> units_to_gather(const std::vector<int>& order, int position, int depth,
                                 const std::vector<bool>& issued) {
  // The unit about to compute and the next `depth` in the order, minus those already in flight.
  std::vector<int> units;
  const std::size_t last = std::min(order.size(), std::size_t(position) + std::size_t(depth) + 1);
  for (std::size_t i = std::size_t(position); i < last; ++i)
    if (!issued[std::size_t(order[i])]) units.push_back(order[i]);
  return units;
}

}  // namespace dtl::ex
