// The reference solutions of the ZeRO exercises: the same functions and contracts as
// labs/zero/exercises.h, in namespace dtl::ref. The exercise track runs them where the
// learner has not written an exercise yet (exercises/unwritten.h); they are compiled from
// labs/zero/solutions.cpp (exercises/CMakeLists.txt). A learner never needs to read them.
#pragma once

#include "labs/zero/exercises.h"

namespace dtl::ref {

using namespace dtl::ex;  // the exercise API's types (BufferView, GradBucket, ...)

ShardRange shard_range(std::size_t n, int rank, int world);
Request reduce_scatter_gradients(Comm& comm, const GradBuffer& unit_grads, void* shard_grads, std::size_t chunk);
ShardStep shard_step(const GradBuffer& unit_params, bool params_are_sharded, const void* shard_grads, const
    ShardRange& shard);
Request all_gather_params(Comm& comm, const GradBuffer& unit_params, std::size_t chunk);
std::vector<int> units_to_gather(const std::vector<int>& order, int position, int depth, const std::vector<bool>&
    issued);

}  // namespace dtl::ref
