// Exercises: the pieces of ring attention (exercises/context_parallel.h).
//
// Implement them, then run the lab on your code and grade it:
//   cmake --build --preset student -j2
//   build/release/student/dtlab run context_parallel --ranks 4 --split zigzag
//   build/release/student/dtlab grade --exercise online_softmax_merge   # --hint 1, 2 or 3 when stuck
#include "exercises/context_parallel.h"

#include "exercises/reference/context_parallel.h"  // generated (exercises/track/reference_copy.cmake)
#include "exercises/track/unwritten.h"

namespace dtl::ex {

void online_softmax_merge(float* o, float* m, float* l, const float* o2, const float* m2, const float* l2, int pairs,
                          int d) {
  return reference_until_written({"online_softmax_merge", "online_softmax_merge"}, ref::online_softmax_merge, o, m, l,
                                 o2, m2, l2, pairs, d);
}

std::vector<int> zigzag_partition(int seq, int ranks, int rank) {
  return reference_until_written({"zigzag_partition", "zigzag_partition"}, ref::zigzag_partition, seq, ranks, rank);
}

void ring_step(Comm& comm, std::vector<float>& current, std::vector<float>& next, int tag, const TransferInfo& info,
               bool last, const std::function<void(const float*)>& compute) {
  return reference_until_written({"ring_step", "ring_step"}, ref::ring_step, comm, current, next, tag, info, last,
                                 compute);
}

}  // namespace dtl::ex
