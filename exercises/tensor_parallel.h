// The tensor-parallel exercise API: the pieces of Megatron-LM's tensor parallelism
// (Shoeybi et al. 2019 §3; Korthikanti et al. 2022 for sequence parallelism) that the
// tensor-parallel lab (labs/tensor_parallel/) calls. Built from solutions/tensor_parallel.cpp
// or your exercises/tensor_parallel.cpp.
//
// Names follow Megatron-LM and PyTorch's nn.Linear (weight W is [out × in], y = x·Wᵀ + b):
//   column-parallel  rank r holds rows [r·out/T, (r+1)·out/T) of W and of b: it computes
//                    its slice of the output features; nothing to add up.
//   row-parallel     rank r holds columns [r·in/T, (r+1)·in/T) of W: it multiplies its slice
//                    of the input features, and the T partial outputs must be SUMMED.
// (The curriculum's seed 001 draws Y = X·W with W as [in × out], so its "row" and "column"
// name the same two splits the other way round.)
//
// The conjugate operators f and g (Megatron's copy_to / reduce_from_tensor_parallel_region):
//                   forward                       backward
//   f (before a     identity: x is replicated     all-reduce (sum) of dL/dx: each rank's
//   column layer)                                 slice of the layer saw all of x
//   g (after a      all-reduce (sum) of the       identity
//   row layer)      partial outputs
// So a Megatron MLP (column → GELU → row) all-reduces once forward (g) and once backward (f).
//
// Sequence parallelism (TpMode::sequence_parallel): outside the f…g regions (LayerNorm,
// dropout, residuals) each rank holds only rows/T rows (a slice of the sequence), so
// f's forward becomes an all-gather of those slices and its backward a reduce-scatter;
// g's forward a reduce-scatter and its backward an all-gather. The same bytes as one
// all-reduce (a ring all-reduce IS a reduce-scatter then an all-gather), but the regions
// in between hold 1/T of the activations.
//
// Tensors are row-major fp32 on the lab's device: `rows` rows (batch × sequence positions)
// of `width` features. full_elems = rows·width; under sequence parallelism a rank's slice is
// the contiguous rows [r·rows/T, (r+1)·rows/T), full_elems/T elements.
#pragma once

#include <cstddef>
#include <functional>

#include "core/comm/comm.h"

namespace dtl::ex {

enum class TpMode { plain, sequence_parallel };

struct TpGroup {
  Comm& comm;  // the tensor-parallel group: comm.rank() is r, comm.size() is T
  TpMode mode = TpMode::plain;
};

// A rank's piece of one weight matrix W [out × in] (and bias [out]) of the full layer:
// rows [row_begin, row_end) and columns [col_begin, col_end) of W; the bias elements
// [bias_begin, bias_end) (empty when the rank adds no bias).
struct LinearSlice {
  int row_begin = 0, row_end = 0, col_begin = 0, col_end = 0;
  int bias_begin = 0, bias_end = 0;
};

// Exercise 20: which piece of a full layer W [out × in] rank `rank` of `tp` holds.
// Column-parallel: rows [r·out/T, (r+1)·out/T), every column, the same bias elements.
// Row-parallel: every row, columns [r·in/T, (r+1)·in/T); the bias is added once, after
// the sum, so only rank 0 holds all of it ([0, out)) and the others none. (out resp. in
// divisible by tp; the lab checks that first.)
LinearSlice column_parallel_slice(int out, int in, int rank, int tp);
LinearSlice row_parallel_slice(int out, int in, int rank, int tp);

// Exercise 21: the f operator. Forward: plain → return x itself (no communication);
// sequence parallel → all-gather the ranks' slices (x holds full_elems/T) into x_full and
// return x_full. Backward: dx_full holds this rank's partial dL/dx over all rows; plain →
// all-reduce (sum) it into dx (full_elems); sequence parallel → reduce-scatter (sum) it
// into dx (this rank's full_elems/T). One collective per call, never an extra one.
const float* f_forward(const TpGroup& g, const float* x, float* x_full, std::size_t full_elems);
void f_backward(const TpGroup& g, const float* dx_full, float* dx, std::size_t full_elems);

// Exercise 22: the g operator, f's mirror. Forward: y_partial holds this rank's partial
// sum over all rows; plain → all-reduce (sum) it into y (full_elems); sequence parallel →
// reduce-scatter (sum) into y (full_elems/T). Backward: plain → return dy itself;
// sequence parallel → all-gather dy's slices into dy_full and return dy_full.
void g_forward(const TpGroup& g, const float* y_partial, float* y, std::size_t full_elems);
const float* g_backward(const TpGroup& g, const float* dy, float* dy_full, std::size_t full_elems);

// The local arithmetic, on the lab's device (the lab binds its TrainOps): nn.Linear's
// forward Y = X·Wᵀ + b (b may be null) and backward dX = dY·W (dX may be null),
// dW = dYᵀ·X, db = Σ_rows dY (db may be null), added to dW and db when `accumulate`.
struct LinearMath {
  std::function<void(const float* X, const float* W, const float* b, float* Y, int rows, int in, int out)> forward;
  std::function<void(const float* X, const float* W, const float* dY, float* dX, float* dW, float* db, int rows, int in,
                     int out, bool accumulate)>
      backward;
};

// One rank's piece of a layer, shaped [out × in] as it holds it (column-parallel: out is
// out/T; row-parallel: in is in/T), with its gradients. bias: null where the rank holds
// none (row-parallel, ranks > 0); bias_grad: always there for a row-parallel layer
// (every rank gets the whole, identical, dL/db), this rank's slice for a column one.
struct TpLinear {
  const float* weight = nullptr;
  const float* bias = nullptr;
  float* weight_grad = nullptr;
  float* bias_grad = nullptr;
  int in = 0, out = 0;
};

// Exercise 23: a column-parallel linear. Forward: f, then y_local = x_f·Wᵀ + b over all
// rows ([rows × out]); x_full is the workspace f may fill (the lab keeps it for backward).
// Backward: x_in is what forward multiplied (f's return value); dW, db from dy_local;
// the partial dL/dx over all rows into dx_full (workspace, [rows × in]); then f's backward
// into dx.
const float* column_parallel_forward(const TpGroup& g, const LinearMath& math, const TpLinear& layer, const float* x,
                                     float* x_full, float* y_local, int rows);
void column_parallel_backward(const TpGroup& g, const LinearMath& math, const TpLinear& layer, const float* x_in,
                              const float* dy_local, float* dx_full, float* dx, int rows, bool accumulate);

// Exercise 24: a row-parallel linear. Forward: y_partial = x_local·Wᵀ over all rows
// ([rows × out], the bias added by the rank that holds it, so the sum has it once), then
// g's forward into y. Backward: g's backward gives dy over all rows (dy_full is its
// workspace); then dx_local = dy·W, dW = dyᵀ·x_local, and db = Σ dy on every rank.
void row_parallel_forward(const TpGroup& g, const LinearMath& math, const TpLinear& layer, const float* x_local,
                          float* y_partial, float* y, int rows);
void row_parallel_backward(const TpGroup& g, const LinearMath& math, const TpLinear& layer, const float* x_local,
                           const float* dy, float* dy_full, float* dx_local, int rows, bool accumulate);

// Exercise 25: vocab-parallel cross-entropy (Megatron's _VocabParallelCrossEntropy). Rank r
// holds the logits of vocabulary entries [vocab_begin, vocab_begin + vocab_local) for every
// row (host memory, [rows × vocab_local]); targets[i] is row i's entry in the FULL vocabulary.
// Return, on every rank, the mean over rows of the cross-entropy of the softmax over the
// full vocabulary, and write dL/dlogits for this rank's entries into dlogits_local. The
// full logits never exist on any rank: the communication is a few values per row (three
// collectives of `rows` floats, whatever T), and the result must stay exact for logits
// far from 0 (a softmax that overflows for logits near 100 is wrong).
float vocab_parallel_cross_entropy(Comm& tp, const float* logits_local, const int* targets, int rows, int vocab_local,
                                   int vocab_begin, float* dlogits_local);

}  // namespace dtl::ex
