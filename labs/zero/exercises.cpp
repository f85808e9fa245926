// Exercises: the pieces of ZeRO / FSDP (labs/zero/exercises.h).
//
// Implement them, then run the lab on your code and grade it:
//   cmake --preset student && cmake --build --preset student -j2
//   build/student/labs/cli/dtlab run zero --ranks 4
//   build/student/labs/cli/dtlab grade --exercise shard_range          # --hint 1, 2 or 3 when stuck
// The visualizer's timeline shows your reduce-scatters during backward and your all-gathers
// after the step (stage 3: before each unit's forward and backward) on each rank's comm stream.
#include "core/error.h"
#include "labs/zero/exercises.h"

namespace dtl::ex {

ShardRange shard_range(std::size_t, int, int) {
  throw NotImplemented("shard_range");
}

Request reduce_scatter_gradients(Comm&, const GradBuffer&, void*, std::size_t) {
  throw NotImplemented("reduce_scatter_gradients");
}

ShardStep shard_step(const GradBuffer&, bool, const void*, const ShardRange&) {
  throw NotImplemented("shard_step");
}

Request all_gather_params(Comm&, const GradBuffer&, std::size_t) {
  throw NotImplemented("all_gather_params");
}

std::vector<int> units_to_gather(const std::vector<int>&, int, int, const std::vector<bool>&) {
  throw NotImplemented("units_to_gather");
}

}  // namespace dtl::ex
