// The reference solutions of the tensor-parallel exercises: the same functions and contracts as
// labs/tensor_parallel/exercises.h, in namespace dtl::ref. The exercise track runs them where the
// learner has not written an exercise yet (exercises/unwritten.h); they are compiled from
// labs/tensor_parallel/solutions.cpp (exercises/CMakeLists.txt). A learner never needs to read them.
#pragma once

#include "labs/tensor_parallel/exercises.h"

namespace dtl::ref {

using namespace dtl::ex;  // the exercise API's types (BufferView, GradBucket, ...)

LinearSlice column_parallel_slice(int out, int in, int rank, int tp);
LinearSlice row_parallel_slice(int out, int in, int rank, int tp);
const float* f_forward(const TpGroup& g, const float* x, float* x_full, std::size_t full_elems);
void f_backward(const TpGroup& g, const float* dx_full, float* dx, std::size_t full_elems);
void g_forward(const TpGroup& g, const float* y_partial, float* y, std::size_t full_elems);
const float* g_backward(const TpGroup& g, const float* dy, float* dy_full, std::size_t full_elems);
const float* column_parallel_forward(const TpGroup& g, const LinearMath& math, const TpLinear& layer, const float* x,
    float* x_full, float* y_local, int rows);
void column_parallel_backward(const TpGroup& g, const LinearMath& math, const TpLinear& layer, const float* x_in,
    const float* dy_local, float* dx_full, float* dx, int rows, bool accumulate);
void row_parallel_forward(const TpGroup& g, const LinearMath& math, const TpLinear& layer, const float* x_local,
    float* y_partial, float* y, int rows);
void row_parallel_backward(const TpGroup& g, const LinearMath& math, const TpLinear& layer, const float* x_local,
    const float* dy, float* dy_full, float* dx_local, int rows, bool accumulate);
float vocab_parallel_cross_entropy(Comm& tp, const float* logits_local, const int* targets, int rows, int vocab_local,
    int vocab_begin, float* dlogits_local);

}  // namespace dtl::ref
