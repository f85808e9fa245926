// Exercises: the pieces of Megatron-style tensor parallelism (labs/tensor_parallel/exercises.h).
//
// Implement them, then run the lab on your code and grade it:
//   cmake --preset student && cmake --build --preset student -j2
//   build/student/labs/cli/dtlab run tensor_parallel --model mlp --tp 2
//   build/student/labs/cli/dtlab grade --exercise f_operator          # --hint 1, 2 or 3 when stuck
#include "core/error.h"
#include "labs/tensor_parallel/exercises.h"

namespace dtl::ex {

LinearSlice column_parallel_slice(int, int, int, int) {
  throw NotImplemented("column_parallel_slice", "tp_slices");
}
LinearSlice row_parallel_slice(int, int, int, int) {
  throw NotImplemented("row_parallel_slice", "tp_slices");
}

const float* f_forward(const TpGroup&, const float*, float*, std::size_t) {
  throw NotImplemented("f_forward", "f_operator");
}
void f_backward(const TpGroup&, const float*, float*, std::size_t) {
  throw NotImplemented("f_backward", "f_operator");
}

void g_forward(const TpGroup&, const float*, float*, std::size_t) {
  throw NotImplemented("g_forward", "g_operator");
}
const float* g_backward(const TpGroup&, const float*, float*, std::size_t) {
  throw NotImplemented("g_backward", "g_operator");
}

const float* column_parallel_forward(const TpGroup&, const LinearMath&, const TpLinear&, const float*, float*, float*,
                                     int) {
  throw NotImplemented("column_parallel_forward", "column_parallel_linear");
}
void column_parallel_backward(const TpGroup&, const LinearMath&, const TpLinear&, const float*, const float*, float*,
                              float*, int, bool) {
  throw NotImplemented("column_parallel_backward", "column_parallel_linear");
}

void row_parallel_forward(const TpGroup&, const LinearMath&, const TpLinear&, const float*, float*, float*, int) {
  throw NotImplemented("row_parallel_forward", "row_parallel_linear");
}
void row_parallel_backward(const TpGroup&, const LinearMath&, const TpLinear&, const float*, const float*, float*,
                           float*, int, bool) {
  throw NotImplemented("row_parallel_backward", "row_parallel_linear");
}

float vocab_parallel_cross_entropy(Comm&, const float*, const int*, int, int, int, float*) {
  throw NotImplemented("vocab_parallel_cross_entropy");
}

}  // namespace dtl::ex
