// Exercises: collectives from point-to-point messages.
//
// What to implement: the functions declared in exercises/collectives.h, using only
// comm.send / recv / isend / irecv / irecv_reduce (the library collectives are only
// allowed in exercise 4). Each stub below throws dtl::NotImplemented with a hint;
// replace the throw with your code.
//
// The formulas you are reproducing (P ranks, N bytes):
//   ring all-reduce sends 2(P-1)/P · N bytes per rank in 2(P-1) steps, only to rank+1;
//   a binomial tree needs ⌈log2 P⌉ steps per phase; recursive halving-doubling needs
//   log2 P steps per phase and moves as few bytes as the ring.
//
// How to work:
//   cmake --preset student && cmake --build --preset student
//   build/student/labs/dtlab run collectives --algo ring --ranks 4 --bytes 256 --step
//   build/student/labs/dtlab grade --exercise ring_reduce_scatter
// The step-through (and the visualizer) draws your transfers: which chunk moved where,
// and how many ranks' contributions each chunk of each rank holds afterwards.
#include "core/error.h"
#include "exercises/collectives.h"

namespace dtl::ex {

void naive_all_reduce(Comm&, BufferView, ReduceOp) {
  throw NotImplemented("naive_all_reduce",
                       "rank 0 recv_reduce()s the whole buffer from ranks 1..P-1 (tag kTagNaive + q - 1), "
                       "divides once if op is avg (finish_average), then sends the result back to each rank q "
                       "(tag kTagNaiveBroadcast + q - 1).");
}

void ring_reduce_scatter(Comm&, BufferView, ReduceOp) {
  throw NotImplemented("ring_reduce_scatter",
                       "for s in 0..P-2: irecv_reduce chunk (r-s-2) mod P from the left neighbour and isend chunk "
                       "(r-s-1) mod P to the right one, tag kTagRingReduceScatter + s; wait both. Chunk bounds: "
                       "chunk_range(count, P, c). Afterwards chunk r holds all P contributions.");
}

void ring_all_gather(Comm&, BufferView) {
  throw NotImplemented("ring_all_gather",
                       "for s in 0..P-2: isend chunk (r-s) mod P to the right and irecv chunk (r-s-1) mod P from the "
                       "left, tag kTagRingAllGather + s. No reduction: the chunks are final, just copy them on.");
}

void ring_all_reduce(Comm&, BufferView, ReduceOp) {
  throw NotImplemented("ring_all_reduce",
                       "ring_reduce_scatter, then (for avg) finish_average on your own chunk r only, then "
                       "ring_all_gather. Total: 2(P-1)/P * N bytes per rank.");
}

void all_reduce_by_reduce_scatter_all_gather(Comm&, BufferView, ReduceOp) {
  throw NotImplemented("all_reduce_by_reduce_scatter_all_gather",
                       "pad the buffer to P*ceil(count/P) elements with zeros (a ScratchBuffer beside buf.data, "
                       "filled with copy_bytes: it may live on a GPU), comm.reduce_scatter it into a block of "
                       "ceil(count/P), comm.all_gather the blocks back, and copy_bytes the first count elements out.");
}

void tree_reduce(Comm&, BufferView, ReduceOp, int) {
  throw NotImplemented("tree_reduce",
                       "work with vr = (rank - root) mod P. For mask = 1, 2, 4, ...: if vr & mask, send your buffer "
                       "to vr - mask and stop; else if vr + mask < P, recv_reduce from vr + mask. "
                       "Tag kTagTreeReduce + log2(mask).");
}

void tree_broadcast(Comm&, BufferView, int) {
  throw NotImplemented("tree_broadcast",
                       "with vr = (rank - root) mod P: receive from vr - lowbit(vr) (unless vr == 0), then send to "
                       "vr + m for each m = lowbit/2, lowbit/4, ... 1 (m = 2^(ceil(log2 P)-1) ... 1 on the root) with "
                       "vr + m < P. Tag kTagTreeBroadcast + log2(m).");
}

void tree_all_reduce(Comm&, BufferView, ReduceOp) {
  throw NotImplemented("tree_all_reduce",
                       "tree_reduce to root 0, finish_average on rank 0 (for avg), then tree_broadcast from 0.");
}

void rhd_all_reduce(Comm&, BufferView, ReduceOp) {
  throw NotImplemented("rhd_all_reduce",
                       "P' = floor_pow2(P). Halving: for mask = P'/2 .. 1, exchange with vr ^ mask: keep the half of "
                       "your current segment range that matches your bit, recv_reduce it, send the other half. "
                       "Then doubling: mask = 1 .. P'/2, swap your range for the partner's. If P != P', ranks "
                       "< 2(P-P') pair up first (even sends to odd) and get the result back at the end.");
}

AllReduceAnswer all_reduce_cost(const AllReduceQuestion&) {
  throw NotImplemented("all_reduce_cost",
                       "bytes = 2(P-1)/P * parameters * bytes_per_param; time = 2(P-1)*latency + bytes / "
                       "(bandwidth_GBps * 1e9); efficiency = compute / (compute + time).");
}

}  // namespace dtl::ex
