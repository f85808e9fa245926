// The ZeRO exercises' hints (exercises/zero.h), three levels each: what
// `dtlab grade --hint N` prints under a failing exercise. Prose only: name functions, indices
// and formulas, never a line of the solution (tests/grade/hints_test.cpp checks).
#include <array>

#include "exercises/track/hints.h"

namespace dtl::ex {

namespace {

constexpr std::array<ExerciseHints, 5> kZeroHints = {
    {{"shard_range",
      {"ZeRO removes the copies that plain data parallelism keeps on every rank: each of the N ranks owns one "
       "piece of every sharding unit and keeps the optimizer state (and from stage 2 the gradients, from stage 3 "
       "the parameters) of that piece only. Reduce-scatter and all-gather want pieces of one size, so the unit "
       "is padded up to N equal chunks and the last pieces may hold padding, or nothing real at all.",
       "chunk = ceil(n / N), in integers (n + N - 1) / N. Rank r's chunk covers [r·chunk, (r+1)·chunk) of the "
       "padded unit, and its real elements are that interval cut off at n: begin = min(r·chunk, n), end = "
       "min((r+1)·chunk, n). Example: n = 10, N = 4 gives chunk 3, and rank 3 owns [9, 10).",
       "Outline: compute the chunk with a rounding-up division (never floating point). Clamp the start and the "
       "end of the rank's interval to n, so a rank past the end gets an empty range with begin = end = n. The "
       "grader checks that the ranges tile [0, n) in rank order and that chunk·N >= n > (chunk - 1)·N."}},
     {"reduce_scatter_gradients",
      {"ZeRO-2: after backward a rank only steps its own shard, so it needs only its own chunk of the averaged "
       "gradients. A reduce-scatter delivers exactly that and sends about half the bytes of an all-reduce, which "
       "is a reduce-scatter followed by an all-gather. Like DDP's buckets, it runs while backward goes on.",
       "NCCL's convention: the input holds N·chunk elements (the padded unit), the output chunk elements, and "
       "rank r receives the reduction of block r. Call comm.ireduce_scatter with unit_grads.data as the input, "
       "shard_grads as the output, chunk as the receive count, the buffer's own dtype and ReduceOp::avg.",
       "Outline: a single non-blocking library call, then hand its Request back to the caller. Do not wait on "
       "it, do not all-reduce, and do not pass the whole unit's length as the count: the count is per rank. The "
       "grader reads one reduce-scatter of N·chunk elements from each rank's comm stream and checks that the "
       "function returns before the other ranks have joined."}},
     {"shard_step",
      {"The optimizer steps only what this rank owns: the real elements of its chunk, never the padding, which "
       "no parameter stands behind. Where those parameters live depends on the stage: stages 1 and 2 keep the "
       "whole padded unit on every rank, stage 3 keeps only the rank's own chunk.",
       "count = end - begin. The gradients are shard_grads itself, which starts at the rank's first owned "
       "element. The parameters: with the whole unit present they start at element begin of unit_params "
       "(unit_params.at(begin), so bf16 is addressed right), and with params_are_sharded the buffer is the "
       "local chunk, so they start at its element 0.",
       "Outline: pick the parameter address from the stage, take the gradient address as given, and count the "
       "owned real elements. A rank with an empty range steps zero elements. The grader checks every rank of "
       "a unit of 10 on 4 ranks and of 2 on 4 ranks, for both stages and for fp32 and bf16."}},
     {"all_gather_params",
      {"After the step each rank holds fresh values for its chunk only, but the next forward needs every "
       "parameter. An all-gather hands every rank's chunk to all the others. In place, each rank's input is "
       "its own chunk inside the unit, so nothing is copied on the side.",
       "comm.iall_gather with the input at element rank·chunk of the unit (unit_params.at of that index), the "
       "output at unit_params.data, send count chunk (per rank, not the whole unit) and the buffer's dtype. "
       "Block q of the output is rank q's input, so the rank's own block is already in place.",
       "Outline: work out where this rank's chunk begins, start one non-blocking all-gather from there into the "
       "whole padded unit, and return its Request without waiting. The grader fills only each rank's own chunk, "
       "leaves the rest NaN, and expects every rank to end with the whole unit after the wait."}},
     {"units_to_gather",
      {"ZeRO-3 gathers a unit's parameters just before they are needed and frees them after. Waiting for every "
       "gather would leave the GPU idle, so the gathers of the next few units are issued early (prefetch) and "
       "run while the current unit computes. Backward walks the units in the opposite order, so prefetching "
       "follows the compute order, not the unit numbers.",
       "The window is positions position .. position + depth of the order, stopping at the end of the order. The "
       "units to issue are order[i] for i in that window whose issued entry is still false. With depth 0 the "
       "window is the current position alone.",
       "Outline: find where the window ends (never past the last position), walk the positions from the current "
       "one to that end, and collect each unit not issued yet, keeping the walk's order. The grader runs whole "
       "forward and backward passes at depths 0 to 7 and checks that each unit is issued once and in time."}}}};

}  // namespace

std::span<const ExerciseHints> zero_hints() { return kZeroHints; }

}  // namespace dtl::ex
