// Exercises: collectives from point-to-point messages.
//
// What to implement: the functions declared in exercises/collectives.h, using only
// comm.send / recv / isend / irecv / irecv_reduce (the library collectives are only
// allowed in exercise 4). Each stub below returns reference_until_written(...): the
// grader reports it as not implemented yet, a lab runs the reference in its place and says
// so. Replace that line with your code. Stuck? The grader has three levels
// of hints per exercise (exercises/hints.cpp): the idea, the indices, an outline in words:
//   build/release/student/dtlab grade --exercise ring_reduce_scatter --hint 2
//
// The formulas you are reproducing (P ranks, N bytes):
//   ring all-reduce sends 2(P-1)/P · N bytes per rank in 2(P-1) steps, only to rank+1;
//   a binomial tree needs ⌈log2 P⌉ steps per phase; recursive halving-doubling needs
//   log2 P steps per phase and moves as few bytes as the ring.
//
// How to work:
//   cmake --build --preset student
//   build/release/student/dtlab run collectives --algo ring --ranks 4 --bytes 256 --step
//   build/release/student/dtlab grade --exercise ring_reduce_scatter
//   build/release/student/dtlab learn collectives     # the path: formulas, commands, what to watch
// The step-through (and the visualizer) draws your transfers: which chunk moved where,
// and how many ranks' contributions each chunk of each rank holds afterwards.
#include "exercises/collectives.h"

#include "exercises/reference/collectives.h"  // generated (exercises/track/reference_copy.cmake)
#include "exercises/track/unwritten.h"

namespace dtl::ex {

void naive_all_reduce(Comm& comm, BufferView buf, ReduceOp op) {
  return reference_until_written("naive_all_reduce", ref::naive_all_reduce, comm, buf, op);
}

void ring_reduce_scatter(Comm& comm, BufferView buf, ReduceOp op) {
  return reference_until_written("ring_reduce_scatter", ref::ring_reduce_scatter, comm, buf, op);
}

void ring_all_gather(Comm& comm, BufferView buf) {
  return reference_until_written("ring_all_gather", ref::ring_all_gather, comm, buf);
}

void ring_all_reduce(Comm& comm, BufferView buf, ReduceOp op) {
  return reference_until_written("ring_all_reduce", ref::ring_all_reduce, comm, buf, op);
}

void ring_sliced_all_reduce(Comm& comm, BufferView buf, ReduceOp op, int slices) {
  return reference_until_written("ring_sliced_all_reduce", ref::ring_sliced_all_reduce, comm, buf, op, slices);
}

void ring_sliced_all_reduce_channels(std::span<Comm* const> channels, BufferView buf, ReduceOp op, int slices) {
  return reference_until_written("ring_sliced_all_reduce_channels", ref::ring_sliced_all_reduce_channels, channels, buf,
                                 op, slices);
}

theory::TreeLinks double_binary_tree(int P, int rank, int tree) {
  return reference_until_written("double_binary_tree", ref::double_binary_tree, P, rank, tree);
}

void double_tree_all_reduce(Comm& comm, BufferView buf, ReduceOp op, int chunks) {
  return reference_until_written("double_tree_all_reduce", ref::double_tree_all_reduce, comm, buf, op, chunks);
}

void double_tree_all_reduce_channels(std::span<Comm* const> channels, BufferView buf, ReduceOp op, int chunks) {
  return reference_until_written("double_tree_all_reduce_channels", ref::double_tree_all_reduce_channels, channels, buf,
                                 op, chunks);
}

void hierarchical_all_reduce(Comm& node, Comm& rail, BufferView buf, ReduceOp op) {
  return reference_until_written("hierarchical_all_reduce", ref::hierarchical_all_reduce, node, rail, buf, op);
}

void all_reduce_by_reduce_scatter_all_gather(Comm& comm, BufferView buf, ReduceOp op) {
  return reference_until_written("all_reduce_by_reduce_scatter_all_gather",
                                 ref::all_reduce_by_reduce_scatter_all_gather, comm, buf, op);
}

void tree_reduce(Comm& comm, BufferView buf, ReduceOp op, int root) {
  return reference_until_written({"tree_reduce", "tree"}, ref::tree_reduce, comm, buf, op, root);
}

void tree_broadcast(Comm& comm, BufferView buf, int root) {
  return reference_until_written({"tree_broadcast", "tree"}, ref::tree_broadcast, comm, buf, root);
}

void tree_all_reduce(Comm& comm, BufferView buf, ReduceOp op) {
  return reference_until_written({"tree_all_reduce", "tree"}, ref::tree_all_reduce, comm, buf, op);
}

void rhd_all_reduce(Comm& comm, BufferView buf, ReduceOp op) {
  return reference_until_written("rhd_all_reduce", ref::rhd_all_reduce, comm, buf, op);
}

AllReduceAnswer all_reduce_cost(const AllReduceQuestion& q) {
  return reference_until_written("all_reduce_cost", ref::all_reduce_cost, q);
}

}  // namespace dtl::ex
