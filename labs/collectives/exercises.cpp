// Exercises: collectives from point-to-point messages.
//
// What to implement: the functions declared in labs/collectives/exercises.h, using only
// comm.send / recv / isend / irecv / irecv_reduce (the library collectives are only
// allowed in exercise 4). Each stub below throws dtl::NotImplemented ("... is not
// implemented yet"); replace the throw with your code. Stuck? The grader has three levels
// of hints per exercise (exercises/hints.cpp): the idea, the indices, an outline in words:
//   build/student/labs/cli/dtlab grade --exercise ring_reduce_scatter --hint 2
//
// The formulas you are reproducing (P ranks, N bytes):
//   ring all-reduce sends 2(P-1)/P · N bytes per rank in 2(P-1) steps, only to rank+1;
//   a binomial tree needs ⌈log2 P⌉ steps per phase; recursive halving-doubling needs
//   log2 P steps per phase and moves as few bytes as the ring.
//
// How to work:
//   cmake --preset student && cmake --build --preset student
//   build/student/labs/cli/dtlab run collectives --algo ring --ranks 4 --bytes 256 --step
//   build/student/labs/cli/dtlab grade --exercise ring_reduce_scatter
//   build/student/labs/cli/dtlab learn collectives     # the path: formulas, commands, what to watch
// The step-through (and the visualizer) draws your transfers: which chunk moved where,
// and how many ranks' contributions each chunk of each rank holds afterwards.
#include "core/error.h"
#include "labs/collectives/exercises.h"

namespace dtl::ex {

void naive_all_reduce(Comm&, BufferView, ReduceOp) {
  throw NotImplemented("naive_all_reduce");
}

void ring_reduce_scatter(Comm&, BufferView, ReduceOp) {
  throw NotImplemented("ring_reduce_scatter");
}

void ring_all_gather(Comm&, BufferView) {
  throw NotImplemented("ring_all_gather");
}

void ring_all_reduce(Comm&, BufferView, ReduceOp) {
  throw NotImplemented("ring_all_reduce");
}

void all_reduce_by_reduce_scatter_all_gather(Comm&, BufferView, ReduceOp) {
  throw NotImplemented("all_reduce_by_reduce_scatter_all_gather");
}

void tree_reduce(Comm&, BufferView, ReduceOp, int) {
  throw NotImplemented("tree_reduce", "tree");
}

void tree_broadcast(Comm&, BufferView, int) {
  throw NotImplemented("tree_broadcast", "tree");
}

void tree_all_reduce(Comm&, BufferView, ReduceOp) {
  throw NotImplemented("tree_all_reduce", "tree");
}

void rhd_all_reduce(Comm&, BufferView, ReduceOp) {
  throw NotImplemented("rhd_all_reduce");
}

AllReduceAnswer all_reduce_cost(const AllReduceQuestion&) {
  throw NotImplemented("all_reduce_cost");
}

}  // namespace dtl::ex
