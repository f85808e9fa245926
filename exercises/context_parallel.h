// Exercises of the context-parallel lab: the three pieces ring attention is made of (Ring
// Attention, Liu et al. 2023; the online softmax of Milakov & Gimelshein 2018 and
// FlashAttention, Dao et al. 2022; the zig-zag split of Llama 3 and torchtitan). The lab
// (labs/context_parallel/) calls them on every rank, so a run and dtlab-viz show the
// learner's own algorithm; `dtlab grade --exercise ID` grades them.
//
//   online_softmax_merge  two partial attention results of the same queries become one
//   zigzag_partition      the positions a rank holds when the sequence is cut zig-zag
//   ring_step             one hop of the ring: post the next chunk's transfer, compute, wait
#pragma once

#include <functional>
#include <vector>

#include "core/comm/comm.h"

namespace dtl::ex {

// A partial attention result for `pairs` (query row, head) pairs over some of the keys:
// for pair p, m[p] is the largest score seen, l[p] = Σ exp(score − m[p]) and o[p·d .. p·d+d)
// = Σ exp(score − m[p])·v, unnormalized (the output is o / l once every key was seen). A pair
// that has seen no key yet has m = −∞, l = 0 and o = 0.
// The merge makes (o, m, l) the partial result over both key sets, as if one had seen them
// all: rescale each side by exp(its max − the new max) before adding. No NaN may appear, even
// when one side or both have seen nothing.
void online_softmax_merge(float* o, float* m, float* l, const float* o2, const float* m2, const float* l2, int pairs,
                          int d);

// The zig-zag split of `seq` positions over `ranks` ranks (seq divisible by 2·ranks): the
// sequence cut into 2·ranks chunks of seq/(2·ranks) positions; rank r holds chunk r and chunk
// 2·ranks − 1 − r, so under a causal mask every rank does the same work. Positions ascending.
std::vector<int> zigzag_partition(int seq, int ranks, int rank);

// One step of ring attention on this rank r of `comm` (P ranks). Unless `last`: post the send
// of `current` to rank r+1 and the receive of the next chunk from rank r−1 into `next` (the
// same size, tag `tag`, `info` for both), and only then `compute(current.data())`, so the
// chunk travels while the block is computed; then wait for both transfers and swap `current`
// and `next`: on return `current` holds the chunk for the next step. With `last`: only
// compute (there is nothing left to pass on).
void ring_step(Comm& comm, std::vector<float>& current, std::vector<float>& next, int tag, const TransferInfo& info,
               bool last, const std::function<void(const float*)>& compute);

}  // namespace dtl::ex
