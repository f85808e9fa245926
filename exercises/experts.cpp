// Exercises: the pieces of a mixture-of-experts layer under expert parallelism
// (exercises/experts.h).
//
// Implement them, then run the lab on your code and grade it:
//   cmake --build --preset student -j2
//   build/release/student/dtlab run experts --ranks 4 --experts 8 --top-k 2
//   build/release/student/dtlab grade --exercise top_k_router     # --hint 1, 2 or 3 when stuck
#include "exercises/experts.h"

#include "exercises/reference/experts.h"  // generated (exercises/track/reference_copy.cmake)
#include "exercises/track/unwritten.h"

namespace dtl::ex {

Routing route_top_k(const float* logits, int tokens, int experts, int k) {
  return reference_until_written({"route_top_k", "top_k_router"}, ref::route_top_k, logits, tokens, experts, k);
}

std::vector<std::uint8_t> kept_slots(const Routing& r, int capacity) {
  return reference_until_written({"kept_slots", "top_k_router"}, ref::kept_slots, r, capacity);
}

Dispatch plan_dispatch(const Routing& r, const std::vector<std::uint8_t>& kept, int ranks) {
  return reference_until_written({"plan_dispatch", "dispatch_layout"}, ref::plan_dispatch, r, kept, ranks);
}

void combine_rows(const float* back, int hidden, const Dispatch& d, const Routing& r, float* out) {
  return reference_until_written({"combine_rows", "combine"}, ref::combine_rows, back, hidden, d, r, out);
}

void combine_backward(const float* back, const float* dout, int hidden, const Dispatch& d, const Routing& r,
                      float* d_back, float* d_weight) {
  return reference_until_written({"combine_backward", "combine"}, ref::combine_backward, back, dout, hidden, d, r,
                                 d_back, d_weight);
}

}  // namespace dtl::ex
