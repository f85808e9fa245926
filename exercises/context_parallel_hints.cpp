// The context-parallel exercises' hints (exercises/context_parallel.h), three levels
// each: what `dtlab grade --hint N` prints under a failing exercise. Prose only, never a line
// of the solution.
#include <array>
#include <span>

#include "exercises/track/hints.h"

namespace dtl::ex {

namespace {

constexpr std::array<ExerciseHints, 3> kContextParallelHints = {{
    {"online_softmax_merge",
     {"Ring attention never sees all of a query's keys at once: each step brings one chunk of keys and "
      "values. The softmax can still be computed exactly if every partial result keeps three things per query "
      "and head: the largest score it has seen, the sum of exponentials of the scores minus that maximum, and "
      "the value rows weighted by those same exponentials. Two partial results over different keys combine into "
      "the result over both.",
      "Let the new maximum be the larger of the two maxima. Each side's sum and weighted values were computed "
      "relative to its own maximum, so multiply each side by the exponential of its maximum minus the new one, "
      "then add the two sides. A side that has seen no key has maximum minus infinity and contributes nothing: "
      "give it the factor zero directly, since minus infinity minus minus infinity is not a number.",
      "Outline: one loop over the pairs. Take the larger maximum, and if it is still minus infinity, skip the pair. "
      "Compute the two scale factors (zero for an empty side), update the sum, then an inner loop over the d "
      "values of the pair updating the weighted output in place, and finally store the new maximum. The grader "
      "compares with a float64 softmax over all keys and merges in both orders."}},
    {"zigzag_partition",
     {"Under a causal mask a query at position p attends to p + 1 keys, so the last positions of a sequence "
      "cost far more than the first. Cutting the sequence into P contiguous blocks gives the last rank about "
      "2P − 1 times the work of the first. The zig-zag split pairs a cheap chunk with an expensive one.",
      "Cut the sequence into 2P equal chunks of seq / (2P) positions. Rank r takes chunk r from the front and "
      "chunk 2P − 1 − r from the back. Chunk c covers positions c times the chunk length up to the next chunk's "
      "start. Because r is always less than 2P − 1 − r, listing the front chunk first gives ascending positions.",
      "Outline: compute the chunk length, then for each of the two chunk indices append its positions in order. "
      "The grader checks worked examples, that the ranks together cover every position once, and that every "
      "rank does the same causal work."}},
    {"ring_step",
     {"In ring attention each rank keeps its queries while the key/value chunks travel around the ring: at "
      "every step a rank computes one block with the chunk it holds and passes that chunk on to the next rank. "
      "The communication is hidden when the transfer of the next chunk runs while the current block is computed.",
      "Rank r sends to rank (r + 1) mod P and receives from rank (r − 1 + P) mod P. Post both transfers with the "
      "non-blocking isend and irecv before calling compute on the current chunk, and wait for both afterwards. The "
      "send reads the current chunk until it completes, so only swap the two buffers after waiting. On the last "
      "step there is no hop: just compute.",
      "Outline: if last, call compute and return. Otherwise post the send of current (its size in bytes) to the "
      "next rank and the receive into next from the previous rank, both with the given tag and info, then "
      "compute on current, wait on the send and on the receive, and swap current with next. The grader checks "
      "which chunk each step computed on 2 to 4 ranks and, from the trace, that each receive was posted before "
      "its block began."}},
}};

}  // namespace

std::span<const ExerciseHints> context_parallel_hints() { return kContextParallelHints; }

}  // namespace dtl::ex
