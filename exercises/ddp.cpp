// Exercises: the parts of DistributedDataParallel (exercises/ddp.h).
//
// Implement them, then run the lab on your code and grade it:
//   cmake --build --preset student -j2
//   build/release/student/dtlab run ddp --variant all --ranks 4
//   build/release/student/dtlab grade --exercise assign_buckets          # --hint 1, 2 or 3 when stuck
// The visualizer's timeline shows your buckets' all-reduces on each rank's comm stream:
// with bucketing right they start during backward instead of after it.
#include "exercises/ddp.h"

#include "exercises/reference/ddp.h"  // generated (exercises/track/reference_copy.cmake)
#include "exercises/track/unwritten.h"

namespace dtl::ex {

std::vector<GradBucket> assign_buckets(const std::vector<std::size_t>& layer_floats, std::size_t capacity_floats) {
  return reference_until_written("assign_buckets", ref::assign_buckets, layer_floats, capacity_floats);
}

void launch_ready_buckets(Comm& comm, const GradBuffer& grads, const std::vector<GradBucket>& buckets, int layer,
                          std::vector<Request>& pending) {
  return reference_until_written("launch_ready_buckets", ref::launch_ready_buckets, comm, grads, buckets, layer,
                                 pending);
}

void wait_for_buckets(std::vector<Request>& pending) {
  return reference_until_written("wait_for_buckets", ref::wait_for_buckets, pending);
}

void average_gradients(Comm& comm, const GradBuffer& grads, std::size_t n) {
  return reference_until_written("average_gradients", ref::average_gradients, comm, grads, n);
}

bool sync_this_micro_batch(int micro_batch, int k) {
  return reference_until_written("sync_this_micro_batch", ref::sync_this_micro_batch, micro_batch, k);
}

}  // namespace dtl::ex
