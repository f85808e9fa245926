// Exercises: the parts of DistributedDataParallel (exercises/ddp.h).
//
// Implement them, then run the lab on your code and grade it:
//   cmake --preset student && cmake --build --preset student -j2
//   build/student/labs/cli/dtlab run ddp --variant all --ranks 4
//   build/student/labs/cli/dtlab grade --exercise assign_buckets
// The visualizer's timeline shows your buckets' all-reduces on each rank's comm stream:
// with bucketing right they start during backward instead of after it.
#include "core/error.h"
#include "exercises/ddp.h"

namespace dtl::ex {

std::vector<GradBucket> assign_buckets(const std::vector<std::size_t>&, std::size_t) {
  throw NotImplemented("assign_buckets",
                       "walk the layers from last to first; open a bucket when there is none or the current one "
                       "already holds >= capacity floats; a layer joins the open bucket (first_layer and begin move to it).");
}

void launch_ready_buckets(Comm&, const GradBuffer&, const std::vector<GradBucket>&, int, std::vector<Request>&) {
  throw NotImplemented("launch_ready_buckets",
                       "for each bucket whose first_layer == layer, push comm.iall_reduce(grads.at(begin), grads.at(begin), "
                       "end - begin, grads.dtype, avg) onto pending. Do not wait.");
}

void wait_for_buckets(std::vector<Request>&) {
  throw NotImplemented("wait_for_buckets", "call wait() on every pending request, then clear the vector.");
}

void average_gradients(Comm&, const GradBuffer&, std::size_t) {
  throw NotImplemented("average_gradients",
                       "all_reduce with ReduceOp::sum in place, then multiply every gradient by 1/P "
                       "(scale_in_place handles any dtype).");
}

bool sync_this_micro_batch(int, int) {
  throw NotImplemented("sync_this_micro_batch", "only the last micro-batch (index k - 1) synchronizes.");
}

}  // namespace dtl::ex
