// The tensor-parallel exercises' hints (exercises/tensor_parallel.h), three levels each: what
// `dtlab grade --hint N` prints under a failing exercise. Prose only: name functions, indices
// and formulas, never a line of the solution (tests/grade/hints_test.cpp checks).
#include <array>

#include "exercises/track/hints.h"

namespace dtl::ex {

namespace {

constexpr std::array<ExerciseHints, 6> kTensorParallelHints = {
    {{"tp_slices",
      {"Tensor parallelism splits each weight matrix across the T ranks of a group instead of copying it. The "
       "curriculum draws Y = X·W cut into vertical or horizontal strips. Here W is nn.Linear's [out × in]: a "
       "column-parallel rank keeps a block of rows of W (some output features, whole), a row-parallel rank a "
       "block of columns of W (some input features, for every output), and the T partial outputs are summed.",
       "Column-parallel, rank r of T: W rows r·out/T up to (r+1)·out/T, every column 0 .. in, and the bias "
       "elements of those same rows. Row-parallel: every row 0 .. out, columns r·in/T up to (r+1)·in/T. The "
       "bias of a row-parallel layer is added after the sum, so rank 0 holds all of it, 0 .. out, and every "
       "other rank an empty range. All ranges are half-open, end excluded.",
       "Outline: divide the split dimension by T to get the block size, multiply by the rank for the start and "
       "by rank plus one for the end, and fill the other dimension whole. For the row-parallel bias, pick the "
       "whole range or an empty one depending on whether the rank is 0. The grader compares with ranges written "
       "by hand and checks that the T slices hold every element of W and of the bias exactly once."}},
     {"f_operator",
      {"Megatron's f sits in front of a column-parallel layer. Forward, every rank needs all of x, which is "
       "already replicated: f does nothing. Backward, each rank's slice of the layer saw all of x, so each holds "
       "only a partial dL/dx and the T partials must be summed: one all-reduce. Under sequence parallelism the "
       "activations outside the layer are split by rows, so forward becomes an all-gather and backward a "
       "reduce-scatter, the two halves of that all-reduce.",
       "Plain forward: hand back the input pointer x, untouched. Sequence-parallel forward: comm.all_gather from "
       "x, which holds full_elems / T floats, into x_full, then hand back x_full. Plain backward: "
       "comm.all_reduce of dx_full into dx, full_elems floats, ReduceOp::sum. Sequence-parallel backward: "
       "comm.reduce_scatter of dx_full into dx with a receive count of full_elems / T. Counts are per rank for "
       "the gather and the scatter, DType::f32 throughout.",
       "Outline: in each direction, branch on g.mode. Forward in plain mode is a single return of the input. "
       "Every other case is exactly one library collective on g.comm, never two and never point-to-point sends. "
       "The grader runs T = 1, 2 and 4 in both modes, compares with sums computed on one rank and reads each "
       "rank's collectives and their bytes from the trace."}},
     {"g_operator",
      {"g is f's mirror, after a row-parallel layer. Forward, each rank holds a partial output over its slice of "
       "the input features, and the layer's output is their sum: one all-reduce. Backward, the gradient of that "
       "sum reaches every partial unchanged, so g passes dy through. So a Megatron MLP, column then row, "
       "communicates once forward (g) and once backward (f).",
       "Plain forward: comm.all_reduce of y_partial into y, full_elems floats, summed. Sequence-parallel "
       "forward: comm.reduce_scatter of y_partial into y, receive count full_elems / T, so each rank keeps its "
       "rows of the sum. Plain backward: hand back dy itself. Sequence-parallel backward: comm.all_gather of "
       "dy, which holds full_elems / T floats, into dy_full, and hand back dy_full.",
       "Outline: g's forward is the same collective as f's backward, and g's backward the same as f's forward, "
       "so you may call your f functions with the buffers in the right places. One collective per call at "
       "most. The grader checks the sums against a single-rank computation and the collectives by name and "
       "bytes, for T = 1, 2 and 4, plain and sequence parallel."}},
     {"column_parallel_linear",
      {"A column-parallel linear computes some output features completely: f, then an ordinary local nn.Linear "
       "with the rank's rows of W and of the bias. No sum is needed after it. Backward, the local gradients of W "
       "and b are already the right slices of the full layer's, but dL/dx is only this slice's share, which f's "
       "backward sums over the ranks.",
       "Forward: x_in is what f's forward returns for x (x_full as the workspace, rows·in floats), then "
       "math.forward of x_in with layer.weight and layer.bias into y_local, over all rows, with layer.in and "
       "layer.out. Hand back x_in. Backward: math.backward with x_in, layer.weight and dy_local, writing the "
       "partial dL/dx into dx_full, the gradients into layer.weight_grad and layer.bias_grad, passing "
       "accumulate on. Then f's backward from dx_full into dx, rows·in floats.",
       "Outline: forward is two calls, f then the local math, returning what the math multiplied so the lab "
       "can keep it for backward. Backward is two calls, the local math then f's backward. The element count "
       "handed to f is always the full rows times in, whatever the mode: f divides it by T itself. The grader "
       "compares with the full layer computed on one rank in double."}},
     {"row_parallel_linear",
      {"A row-parallel linear multiplies the rank's slice of the input features by its columns of W. Each rank "
       "gets a partial output over all the output features, and g's forward sums them. The bias must appear "
       "once in that sum, which is why only rank 0 holds it. Backward, g hands dy to every rank, and each "
       "computes the gradients of its own slice.",
       "Forward: math.forward of x_local with layer.weight and layer.bias into y_partial, over all rows, then "
       "g's forward from y_partial into y with rows·out floats. Backward: dy_all is what g's backward returns "
       "for dy (dy_full as its workspace, rows·out floats), then math.backward with x_local, layer.weight and "
       "dy_all, writing dx_local, layer.weight_grad and layer.bias_grad, passing accumulate on.",
       "Outline: the column-parallel layer's two steps in the other order. Forward computes locally then "
       "communicates, backward communicates then computes. Pass layer.bias as it is: null on the ranks that "
       "hold none. The bias gradient comes out whole on every rank, because every rank sees the same dy. The "
       "grader compares y, dx, dW and db with the full layer's, plain and sequence parallel."}},
     {"vocab_parallel_cross_entropy",
      {"The output layer is split over the vocabulary, so each rank holds only some columns of the logits. "
       "Gathering them would cost rows·vocab floats. Softmax cross-entropy needs just three numbers per row "
       "from across the ranks: the row's max, the sum of exp(logit - max), and the target's logit. Three "
       "all-reduces of rows floats, whatever T, and the max shift keeps exp from overflowing.",
       "Per row i: m = max over ranks of the local max (ReduceOp::max). s = sum over ranks of the local sum of "
       "exp(logit - m). t = the target's logit minus m, from the rank where targets[i] - vocab_begin lies in "
       "0 .. vocab_local - 1, zero elsewhere, summed. loss_i = log s - t. The loss is the mean of loss_i. The "
       "gradient of a local entry v is (exp(logit - m) / s - 1 if v is the target else 0) / rows.",
       "Outline: one pass for each row's local max, all-reduce them. One pass for the exponentials, which you "
       "can keep in dlogits_local, their row sums and the owned target logits, then all-reduce both arrays. "
       "A last pass turns the exponentials into the gradient, subtracts one over rows at an owned target, and "
       "adds up the loss in double. The grader uses logits up to 120 and reads exactly three all-reduces."}}}};

}  // namespace

std::span<const ExerciseHints> tensor_parallel_hints() { return kTensorParallelHints; }

}  // namespace dtl::ex
