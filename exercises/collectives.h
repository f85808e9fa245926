// The collectives exercise API: what the labs call and the grader tests.
//
// Two builds implement exactly these functions: solutions/collectives.cpp (the default,
// what CI tests) and exercises/collectives.cpp (stubs a student fills in, built with
// `cmake --build --preset student`). Labs reach them only through this header, so the lab and
// the visualizer show whichever code was built.
//
// Conventions every function follows:
//  * The buffer of `count` elements is cut into P = comm.size() chunks with
//    dtl::chunk_range(count, P, c): sizes differ by at most one element, any count works.
//  * Each algorithm step uses its own tag: kTag<Phase> + step. The trace then shows
//    steps as tags, and the lab counts them. Phases are kTagStride apart, so no two
//    phases share a tag at any world size up to kMaxRanks (see below).
//  * Combine received data with comm.recv_reduce (one pass, no staging copy). ReduceOp::avg
//    combines as a sum; the function that finishes the reduction divides once, at its end
//    (dtl::finish_average): the all-reduces do, ring_reduce_scatter does not (its callers,
//    ring_all_reduce and the lab, divide the chunk it finished).
//  * The buffer may live on a GPU (--device cuda): never read or write it from the host.
//    Move bytes with comm's calls, dtl::copy_bytes and a dtl::ScratchBuffer for staging
//    (core/memory/device_ops.h); finish_average works on either memory.
//  * Annotate transfers with TransferInfo{.step = s, .chunk = c, .chunk_count = n} (the
//    algorithm's step, the first chunk the message carries, how many) so traces and the
//    step-through can draw which chunk moved (core/comm/comm.h).
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "core/comm/chunking.h"
#include "core/comm/comm.h"
#include "core/error.h"
#include "core/memory/device_ops.h"
#include "core/theory/collectives.h"
#include "exercises/track/hints.h"

namespace dtl::ex {

// A typed view of a rank's buffer.
struct BufferView {
  void* data = nullptr;
  std::size_t count = 0;  // elements
  DType dtype = DType::f32;

  std::size_t element_size() const { return dtype_size(dtype); }
  std::size_t bytes() const { return count * element_size(); }
  void* at(std::size_t element) const { return static_cast<char*>(data) + element * element_size(); }
};

// Tags: step s of a phase is tag kTag<Phase> + s, and phase k starts at k · kTagStride.
// A phase has at most P-1 steps (naive, ring; trees and rhd about log2 P), so with the
// stride at kMaxRanks the phases never overlap: 200+s and 300+s did from 102 ranks on.
inline constexpr int kMaxRanks = 4096;        // the largest world these functions support
inline constexpr int kTagStride = kMaxRanks;  // > the most steps of any phase (P-1)

enum StepTags : int {
  kTagNaive = 1 * kTagStride,           // rank q -> rank 0, tag kTagNaive + q - 1
  kTagNaiveBroadcast = 2 * kTagStride,  // rank 0 -> rank q, tag kTagNaiveBroadcast + q - 1
  kTagRingReduceScatter = 3 * kTagStride,
  kTagRingAllGather = 4 * kTagStride,
  kTagTreeReduce = 5 * kTagStride,
  kTagTreeBroadcast = 6 * kTagStride,
  kTagRhd = 7 * kTagStride,
};
// MPI promises tags up to 32767 only (MPI_TAG_UB may be larger, never smaller).
static_assert(kTagRhd + kTagStride - 1 <= 32767, "the last phase's tags must stay within MPI's guaranteed range");

// Throws UsageError when a world is larger than the tag scheme above allows; the labs and
// the bench call it before running these functions.
inline void require_supported_world(int ranks) {
  if (ranks > kMaxRanks)
    throw UsageError("the collectives exercises support at most " + std::to_string(kMaxRanks) +
                     " ranks (their tags are " + std::to_string(kTagStride) + " apart per phase), got " +
                     std::to_string(ranks) + "; use fewer ranks");
}

// Exercise 0 (warm-up), naive all-reduce: every rank sends its whole buffer to rank 0,
// which combines them and sends the result back. (P-1)·N bytes leave rank 0.
void naive_all_reduce(Comm& comm, BufferView buf, ReduceOp op);

// Exercise 1, ring reduce-scatter: P-1 steps; at step s rank r sends chunk (r-s-1) mod P
// to its right neighbour and recv_reduces chunk (r-s-2) mod P from its left one.
// Afterwards chunk r of rank r holds the reduction of chunk r over all ranks (the other
// chunks hold partial sums). Sends (P-1)/P · N bytes. With ReduceOp::avg, chunk r holds
// the SUM over the ranks: it never divides (whoever calls it divides once, after).
void ring_reduce_scatter(Comm& comm, BufferView buf, ReduceOp op);

// Exercise 2, ring all-gather: before, chunk r of rank r is final; after, every chunk is.
// P-1 steps; at step s rank r sends chunk (r-s) mod P right and receives (r-s-1) mod P.
void ring_all_gather(Comm& comm, BufferView buf);

// Exercise 3, ring all-reduce = ring_reduce_scatter then ring_all_gather: 2(P-1) steps,
// exactly 2(P-1)/P · N bytes sent per rank, only to the right neighbour.
void ring_all_reduce(Comm& comm, BufferView buf, ReduceOp op);

// The ring pipelined in slices (NCCL's chunk/slice structure), the optimized ring beside
// exercise 3: every step's chunk is cut into `slices` pieces with chunk_range(chunk, slices, i),
// sent back to back, and slice i moves on to the next step as soon as it has arrived (and
// been reduced), so the reduce of slice i overlaps the transfer of slice i+1 and no rank
// waits for a whole chunk. Step s (0 <= s < 2(P-1)) sends chunk (r-s-1) mod P right and
// receives chunk (r-s-2) mod P from the left (recv_reduce while s < P-1, a copy after),
// tags as ring_all_reduce's: kTagRingReduceScatter + s, then kTagRingAllGather + s-(P-1).
// Same bytes and steps as the ring, 2(P-1)·slices messages. slices = 1 is the ring.
void ring_sliced_all_reduce(Comm& comm, BufferView buf, ReduceOp op, int slices);
// NCCL's channels: the buffer cut into C = channels.size() parts (chunk_range(count, C, h)),
// part h all-reduced by its own ring on channels[h] (Comm::split_channels: the same ranks,
// separate connections), all C rings at once: slice i of every channel is sent before slice
// i+1 of any. Per rank the ring's bytes and steps (tags, shared by the channels), 2(P-1)·S·C
// messages. One channel is ring_sliced_all_reduce.
void ring_sliced_all_reduce_channels(std::span<Comm* const> channels, BufferView buf, ReduceOp op, int slices);

// Exercise 8, NCCL's double binary tree (src/graph/trees.cc): rank's parent and children in
// tree 0 or 1 of P ranks (-1 where there is none). Tree 0: rank r with lowest set bit b has
// parent (r XOR b) | 2b, or r XOR b when that is >= P; children r - b/2 and r + b/2 (the
// second halved until it is < P; none when b = 1: odd ranks are leaves); rank 0 is the root
// with one child, in children[1]: the largest power of two < P. Tree 1: tree 0 mirrored
// (rank r plays P-1-r) when P is even, shifted (r plays r-1 mod P) when P is odd.
theory::TreeLinks double_binary_tree(int P, int rank, int tree);

// NCCL's double binary tree all-reduce: the buffer's two halves (chunk_range(count, 2, t))
// go up and down two complementary binary trees (theory::double_tree_links(P, rank, t)), each
// half cut into `chunks` pieces (chunk_range(half, chunks, k)) pipelined: reduce up (recv_reduce
// from each child, then send to the parent; the root finishes chunk k), then broadcast down
// (recv from the parent, send to each child), on the trees of double_binary_tree. Up chunk k of
// tree t uses tag kTagTreeReduce + 2k + t, down kTagTreeBroadcast + 2k + t (at most kTagStride/2
// chunks). The trees never wait for each other (NCCL runs them on channels of their own): a leaf
// posts all its sends up, and all its receives down, at once; only inner nodes go chunk by chunk.
void double_tree_all_reduce(Comm& comm, BufferView buf, ReduceOp op, int chunks);
// The same with C = channels.size() channels: part h of the buffer (chunk_range(count, C, h))
// on a pair of trees of its own over channels[h], chunk k of every channel before chunk k+1.
void double_tree_all_reduce_channels(std::span<Comm* const> channels, BufferView buf, ReduceOp op, int chunks);

// Exercise 9, the hierarchical all-reduce of a two-tier cluster (NCCL's between nodes with a
// NIC per GPU; Horovod's hierarchical allreduce): `node` holds this node's G ranks, `rail` the
// n ranks of every node with this rank's local index (node.rank()). Three phases, from your rings:
//   1. ring_reduce_scatter over `node` (sum): local rank l now holds chunk l of the node's sum,
//      chunk_range(buf.count, G, l);
//   2. ring_all_reduce over `rail` on that chunk alone (a BufferView of it): the chunk is the sum
//      over every node, each rank's chunk crossing between nodes on its own rail, in parallel;
//   3. ring_all_gather over `node`: every rank holds the whole sum.
// avg: sum in phases 1 and 2, and divide chunk l by G·n once, before phase 3 (ex::finish_average).
// Bytes per rank 2(G−1)/G·N + 2(n−1)/n·N/G, against the flat ring's 2(P−1)/P·N all on the slow tier.
void hierarchical_all_reduce(Comm& node, Comm& rail, BufferView buf, ReduceOp op);

// Exercise 4, AllReduce == AllGather ∘ ReduceScatter with the *library* collectives:
// reduce_scatter then all_gather must give the same bits as comm.all_reduce for any
// count (pad to a multiple of P; the padding must not change the result).
void all_reduce_by_reduce_scatter_all_gather(Comm& comm, BufferView buf, ReduceOp op);

// Exercise 5, binomial trees rooted at `root`: ⌈log2 P⌉ steps each.
// tree_reduce leaves the reduction on root (other ranks' buffers become scratch);
// tree_broadcast copies root's buffer to everyone. tree_all_reduce = both, root 0.
void tree_reduce(Comm& comm, BufferView buf, ReduceOp op, int root);
void tree_broadcast(Comm& comm, BufferView buf, int root);
void tree_all_reduce(Comm& comm, BufferView buf, ReduceOp op);

// Exercise 6, recursive halving-doubling all-reduce (Rabenseifner): reduce-scatter by
// halving the exchanged range each step, then all-gather by doubling it: 2·log2 P steps
// (latency log2(P)·α per phase, against the ring's (P-1)·α) and 2(P-1)/P · N bytes.
// For P not a power of two, the first 2·(P-P') ranks pair up first (P' = largest power
// of two <= P): even ones hand their data to the odd neighbour and get the result back.
void rhd_all_reduce(Comm& comm, BufferView buf, ReduceOp op);

// Exercise 7, the communication-cost calculator (the curriculum's "7B on 8 GPUs"
// questions): ring all-reduce of every gradient once per step.
struct AllReduceQuestion {
  double parameters = 0;       // model parameters
  double bytes_per_param = 2;  // gradient bytes per parameter (2 for fp16/bf16)
  int gpus = 1;
  double bandwidth_GBps = 0;  // per-link bandwidth, GB = 1e9 bytes
  double latency_us = 0;      // per-step latency α
  double compute_s = 0;       // forward + backward time of one step
};
struct AllReduceAnswer {
  double bytes_sent_per_gpu = 0;  // 2(P-1)/P · gradient bytes
  double time_s = 0;              // 2(P-1)·α + bytes_sent_per_gpu / bandwidth
  double efficiency = 0;          // compute / (compute + communication), no overlap
};
AllReduceAnswer all_reduce_cost(const AllReduceQuestion& q);

// The hints of these exercises, three levels each (collectives_hints.cpp), for LabInfo.
std::span<const ExerciseHints> collectives_hints();

}  // namespace dtl::ex
