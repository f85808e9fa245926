// Temporary solutions (replaced by the graded track's)
#include "exercises/zero.h"

#include <algorithm>

namespace dtl::ex {

ShardRange shard_range(std::size_t n, int rank, int world) {
  const std::size_t chunk = (n + std::size_t(world) - 1) / std::size_t(world);
  return {chunk, std::min(std::size_t(rank) * chunk, n), std::min(std::size_t(rank + 1) * chunk, n)};
}

Request reduce_scatter_gradients(Comm& comm, const GradBuffer& unit_grads, void* shard_grads, std::size_t chunk) {
  return comm.ireduce_scatter(unit_grads.data, shard_grads, chunk, unit_grads.dtype, ReduceOp::avg);
}

ShardStep shard_step(const GradBuffer& unit_params, bool params_are_sharded, const void* shard_grads, const ShardRange& shard) {
  void* p = params_are_sharded ? unit_params.data : unit_params.at(shard.begin);
  return {p, shard_grads, shard.end - shard.begin};
}

Request all_gather_params(Comm& comm, const GradBuffer& unit_params, std::size_t chunk) {
  return comm.iall_gather(unit_params.at(std::size_t(comm.rank()) * chunk), unit_params.data, chunk, unit_params.dtype);
}

std::vector<int> units_to_gather(const std::vector<int>& order, int position, int depth, const std::vector<bool>& issued) {
  std::vector<int> out;
  for (int i = position; i <= position + depth && i < int(order.size()); ++i)
    if (!issued[std::size_t(order[std::size_t(i)])]) out.push_back(order[std::size_t(i)]);
  return out;
}

}  // namespace dtl::ex
