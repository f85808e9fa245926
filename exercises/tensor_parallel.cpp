// Exercises: the pieces of Megatron-style tensor parallelism (exercises/tensor_parallel.h).
//
// Implement them, then run the lab on your code and grade it:
//   cmake --build --preset student -j2
//   build/release/student/dtlab run tensor_parallel --model mlp --tp 2
//   build/release/student/dtlab grade --exercise f_operator          # --hint 1, 2 or 3 when stuck
#include "exercises/tensor_parallel.h"

#include "exercises/reference/tensor_parallel.h"  // generated (exercises/track/reference_copy.cmake)
#include "exercises/track/unwritten.h"

namespace dtl::ex {

LinearSlice column_parallel_slice(int out, int in, int rank, int tp) {
  return reference_until_written({"column_parallel_slice", "tp_slices"}, ref::column_parallel_slice, out, in, rank, tp);
}

LinearSlice row_parallel_slice(int out, int in, int rank, int tp) {
  return reference_until_written({"row_parallel_slice", "tp_slices"}, ref::row_parallel_slice, out, in, rank, tp);
}

const float* f_forward(const TpGroup& g, const float* x, float* x_full, std::size_t full_elems) {
  return reference_until_written({"f_forward", "f_operator"}, ref::f_forward, g, x, x_full, full_elems);
}

void f_backward(const TpGroup& g, const float* dx_full, float* dx, std::size_t full_elems) {
  return reference_until_written({"f_backward", "f_operator"}, ref::f_backward, g, dx_full, dx, full_elems);
}

void g_forward(const TpGroup& g, const float* y_partial, float* y, std::size_t full_elems) {
  return reference_until_written({"g_forward", "g_operator"}, ref::g_forward, g, y_partial, y, full_elems);
}

const float* g_backward(const TpGroup& g, const float* dy, float* dy_full, std::size_t full_elems) {
  return reference_until_written({"g_backward", "g_operator"}, ref::g_backward, g, dy, dy_full, full_elems);
}

const float* column_parallel_forward(const TpGroup& g, const LinearMath& math, const TpLinear& layer, const float* x,
                                     float* x_full, float* y_local, int rows) {
  return reference_until_written({"column_parallel_forward", "column_parallel_linear"}, ref::column_parallel_forward, g,
                                 math, layer, x, x_full, y_local, rows);
}

void column_parallel_backward(const TpGroup& g, const LinearMath& math, const TpLinear& layer, const float* x_in,
                              const float* dy_local, float* dx_full, float* dx, int rows, bool accumulate) {
  return reference_until_written({"column_parallel_backward", "column_parallel_linear"}, ref::column_parallel_backward,
                                 g, math, layer, x_in, dy_local, dx_full, dx, rows, accumulate);
}

void row_parallel_forward(const TpGroup& g, const LinearMath& math, const TpLinear& layer, const float* x_local,
                          float* y_partial, float* y, int rows) {
  return reference_until_written({"row_parallel_forward", "row_parallel_linear"}, ref::row_parallel_forward, g, math,
                                 layer, x_local, y_partial, y, rows);
}

void row_parallel_backward(const TpGroup& g, const LinearMath& math, const TpLinear& layer, const float* x_local,
                           const float* dy, float* dy_full, float* dx_local, int rows, bool accumulate) {
  return reference_until_written({"row_parallel_backward", "row_parallel_linear"}, ref::row_parallel_backward, g, math,
                                 layer, x_local, dy, dy_full, dx_local, rows, accumulate);
}

float vocab_parallel_cross_entropy(Comm& tp, const float* logits_local, const int* targets, int rows, int vocab_local,
                                   int vocab_begin, float* dlogits_local) {
  return reference_until_written("vocab_parallel_cross_entropy", ref::vocab_parallel_cross_entropy, tp, logits_local,
                                 targets, rows, vocab_local, vocab_begin, dlogits_local);
}

}  // namespace dtl::ex
