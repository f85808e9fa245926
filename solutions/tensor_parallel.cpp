// Reference solutions of the tensor-parallel exercises (exercises/tensor_parallel.h).
#include "exercises/tensor_parallel.h"

// A call between two of these functions puts the name in parentheses, `(f)(args)`: it then
// means this file's f only, never the learner's f of the same name that argument-dependent
// lookup would add (exercises/track/reference_copy.cmake compiles this file a second time as
// dtl::ref, beside the learner's dtl::ex, for the labs to run where a stub is not written).

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace dtl::ex {

namespace {
bool sequence_parallel(const TpGroup& g) { return g.mode == TpMode::sequence_parallel; }
std::size_t slice_elems(const TpGroup& g, std::size_t full_elems) { return full_elems / std::size_t(g.comm.size()); }
}  // namespace

LinearSlice column_parallel_slice(int out, int in, int rank, int tp) {
  const int rows = out / tp;
  return {rank * rows, (rank + 1) * rows, 0, in, rank * rows, (rank + 1) * rows};
}

LinearSlice row_parallel_slice(int out, int in, int rank, int tp) {
  const int cols = in / tp;
  const int bias_end = rank == 0 ? out : 0;  // the sum must contain the bias once
  return {0, out, rank * cols, (rank + 1) * cols, 0, bias_end};
}

const float* f_forward(const TpGroup& g, const float* x, float* x_full, std::size_t full_elems) {
  if (!sequence_parallel(g)) return x;
  g.comm.all_gather(x, x_full, slice_elems(g, full_elems), DType::f32);
  return x_full;
}

void f_backward(const TpGroup& g, const float* dx_full, float* dx, std::size_t full_elems) {
  if (sequence_parallel(g))
    g.comm.reduce_scatter(dx_full, dx, slice_elems(g, full_elems), DType::f32, ReduceOp::sum);
  else
    g.comm.all_reduce(dx_full, dx, full_elems, DType::f32, ReduceOp::sum);
}

void g_forward(const TpGroup& g, const float* y_partial, float* y, std::size_t full_elems) {
  (f_backward)(g, y_partial, y, full_elems);  // g's forward is f's backward: the same collective
}

const float* g_backward(const TpGroup& g, const float* dy, float* dy_full, std::size_t full_elems) {
  return (f_forward)(g, dy, dy_full, full_elems);  // and g's backward is f's forward
}

const float* column_parallel_forward(const TpGroup& g, const LinearMath& math, const TpLinear& layer, const float* x,
                                     float* x_full, float* y_local, int rows) {
  const float* x_in = (f_forward)(g, x, x_full, std::size_t(rows) * std::size_t(layer.in));
  math.forward(x_in, layer.weight, layer.bias, y_local, rows, layer.in, layer.out);
  return x_in;
}

void column_parallel_backward(const TpGroup& g, const LinearMath& math, const TpLinear& layer, const float* x_in,
                              const float* dy_local, float* dx_full, float* dx, int rows, bool accumulate) {
  math.backward(x_in, layer.weight, dy_local, dx_full, layer.weight_grad, layer.bias_grad, rows, layer.in, layer.out,
                accumulate);
  (f_backward)(g, dx_full, dx, std::size_t(rows) * std::size_t(layer.in));
}

void row_parallel_forward(const TpGroup& g, const LinearMath& math, const TpLinear& layer, const float* x_local,
                          float* y_partial, float* y, int rows) {
  math.forward(x_local, layer.weight, layer.bias, y_partial, rows, layer.in, layer.out);
  (g_forward)(g, y_partial, y, std::size_t(rows) * std::size_t(layer.out));
}

void row_parallel_backward(const TpGroup& g, const LinearMath& math, const TpLinear& layer, const float* x_local,
                           const float* dy, float* dy_full, float* dx_local, int rows, bool accumulate) {
  const float* dy_all = (g_backward)(g, dy, dy_full, std::size_t(rows) * std::size_t(layer.out));
  math.backward(x_local, layer.weight, dy_all, dx_local, layer.weight_grad, layer.bias_grad, rows, layer.in, layer.out,
                accumulate);
}

float vocab_parallel_cross_entropy(Comm& tp, const float* logits_local, const int* targets, int rows, int vocab_local,
                                   int vocab_begin, float* dlogits_local) {
  const std::size_t n = std::size_t(rows);
  std::vector<float> row_max(n, -std::numeric_limits<float>::infinity());
  for (std::size_t i = 0; i < n; ++i) {
    const float* row = logits_local + i * std::size_t(vocab_local);
    row_max[i] = *std::max_element(row, row + vocab_local);
  }
  tp.all_reduce(row_max.data(), row_max.data(), n, DType::f32, ReduceOp::max);
  // Σ exp(logit − max) over the local entries, and the target's shifted logit if owned here.
  std::vector<float> sum_exp(n, 0.0f), target_logit(n, 0.0f);
  for (std::size_t i = 0; i < n; ++i) {
    const float* row = logits_local + i * std::size_t(vocab_local);
    float* drow = dlogits_local + i * std::size_t(vocab_local);
    for (int v = 0; v < vocab_local; ++v) {
      drow[v] = std::exp(row[v] - row_max[i]);
      sum_exp[i] += drow[v];
    }
    const int local_target = targets[i] - vocab_begin;
    if (local_target >= 0 && local_target < vocab_local) target_logit[i] = row[local_target] - row_max[i];
  }
  tp.all_reduce(sum_exp.data(), sum_exp.data(), n, DType::f32, ReduceOp::sum);
  tp.all_reduce(target_logit.data(), target_logit.data(), n, DType::f32, ReduceOp::sum);
  double loss = 0;
  const float inv_rows = 1.0f / float(rows);
  for (std::size_t i = 0; i < n; ++i) {
    loss += std::log(double(sum_exp[i])) - double(target_logit[i]);
    float* drow = dlogits_local + i * std::size_t(vocab_local);
    for (int v = 0; v < vocab_local; ++v) drow[v] = drow[v] / sum_exp[i] * inv_rows;  // softmax / rows
    const int local_target = targets[i] - vocab_begin;
    if (local_target >= 0 && local_target < vocab_local) drow[local_target] -= inv_rows;
  }
  return float(loss / double(rows));
}

}  // namespace dtl::ex
