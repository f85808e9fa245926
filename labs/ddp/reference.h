// The reference solutions of the DDP exercises: the same functions and contracts as
// labs/ddp/exercises.h, in namespace dtl::ref. The exercise track runs them where the
// learner has not written an exercise yet (exercises/unwritten.h); they are compiled from
// labs/ddp/solutions.cpp (exercises/CMakeLists.txt). A learner never needs to read them.
#pragma once

#include "labs/ddp/exercises.h"

namespace dtl::ref {

using namespace dtl::ex;  // the exercise API's types (BufferView, GradBucket, ...)

std::vector<GradBucket> assign_buckets(const std::vector<std::size_t>& layer_floats, std::size_t capacity_floats);
void launch_ready_buckets(Comm& comm, const GradBuffer& grads, const std::vector<GradBucket>& buckets, int layer,
    std::vector<Request>& pending);
void wait_for_buckets(std::vector<Request>& pending);
void average_gradients(Comm& comm, const GradBuffer& grads, std::size_t n);
bool sync_this_micro_batch(int micro_batch, int k);

}  // namespace dtl::ref
