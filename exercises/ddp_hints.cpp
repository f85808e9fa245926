// The DDP exercises' hints (exercises/ddp.h), three levels each: what
// `dtlab grade --hint N` prints under a failing exercise. Prose only: name functions, indices
// and formulas, never a line of the solution (tests/grade/hints_test.cpp checks).
#include <array>

#include "exercises/track/hints.h"

namespace dtl::ex {

namespace {

constexpr std::array<ExerciseHints, 5> kDdpHints = {
    {{"assign_buckets",
      {"DDP does not all-reduce each gradient alone: it groups layers into buckets (25 MiB by default in PyTorch) "
       "and all-reduces a bucket as soon as backward has produced all of its gradients. Backward runs from the "
       "last layer to the first, so buckets fill in that order, whole layers at a time.",
       "Walk l = L-1 down to 0. Layer l occupies [begin_l, begin_l + layer_floats[l]), where begin_l is the sum of "
       "the sizes of layers 0 .. l-1. Open a new bucket when there is none yet or the open one already holds at "
       "least capacity_floats. Adding layer l to a bucket moves its first_layer to l and its begin to begin_l (a "
       "bucket grows toward the start of the buffer), while last_layer and end stay those of the layer it opened "
       "with.",
       "Outline: compute where every layer starts with a running sum. Go through the layers backwards. For each, "
       "check whether the open bucket is full (end - begin has reached the capacity). If it is, or there is no "
       "bucket yet, open one covering just this layer, else extend the open one down to this layer. Return the "
       "buckets in the order you opened them: the one holding the last layer first, and together they tile the "
       "buffer without gaps."}},
     {"launch_ready_buckets",
      {"Overlap: a bucket's all-reduce can run while backward computes the layers before it. Without overlap a "
       "step takes T_forward + T_backward + T_comm + T_update, with it about T_forward + max(T_backward, T_comm) + "
       "T_update. So start a bucket's all-reduce the moment its last gradient is ready, and never wait for it here.",
       "Backward finishes layers L-1, .., 0, so a bucket is complete when its first_layer (its lowest layer) is "
       "done. For every bucket whose first_layer equals layer, start comm.iall_reduce in place over its elements "
       "[begin, end): address grads.at(begin), end - begin elements, grads.dtype, ReduceOp::avg. Keep the "
       "returned Request in pending.",
       "Outline: go through the buckets and skip those this layer does not complete. For each one it completes, "
       "start a non-blocking all-reduce of the bucket's range, in place, averaging, in the buffer's own dtype, and "
       "append its request to pending. Return without waiting: the grader checks after every layer that exactly "
       "the completed buckets are in flight."}},
     {"wait_for_buckets",
      {"Before the optimizer step every launched all-reduce must have finished, or the step would read gradients "
       "that are only partly averaged. What is still in flight here is the exposed communication of the timeline.",
       "Every Request has wait(), which returns once its transfer is complete (and rethrows its error). Afterwards "
       "pending must be empty, ready for the next step.",
       "Outline: wait on every request in pending (the order does not matter), then empty the vector."}},
     {"average_gradients",
      {"Every rank computed gradients on its own part of the global batch, and all ranks must step with the mean. "
       "A sum all-reduce followed by one division by P gives it: what ReduceOp::avg does inside, and what naive "
       "DDP does tensor by tensor.",
       "comm.all_reduce in place over the first n elements with ReduceOp::sum in grads.dtype, then scale the same n "
       "elements by 1/P with scale_in_place (core/comm/dtype.h), which handles fp32, bf16 and fp16 alike.",
       "Outline: one library all-reduce of the n gradients, summing, in place. Then one scaling by one over the "
       "number of ranks. Do not widen bf16 to float and back yourself: the bf16 test allows one rounding per "
       "operation, in the buffer's own dtype."}},
     {"sync_this_micro_batch",
      {"Gradient accumulation: with k micro-batches per step, gradients add up locally (PyTorch's no_sync) and are "
       "synchronized once per step, so a step costs one all-reduce instead of k.",
       "Micro-batches are numbered 0 .. k-1. Only the last one, index k-1, synchronizes: true for it, false for "
       "every other.",
       "Outline: a single comparison of micro_batch with the index of the last micro-batch. The grader tries every "
       "micro-batch of k = 1 .. 6."}}}};

}  // namespace

std::span<const ExerciseHints> ddp_hints() { return kDdpHints; }

}  // namespace dtl::ex
