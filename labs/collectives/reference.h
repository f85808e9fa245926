// The reference solutions of the collectives exercises: the same functions and contracts as
// labs/collectives/exercises.h, in namespace dtl::ref. The exercise track runs them where the
// learner has not written an exercise yet (exercises/unwritten.h); they are compiled from
// labs/collectives/solutions.cpp (exercises/CMakeLists.txt). A learner never needs to read them.
#pragma once

#include "labs/collectives/exercises.h"

namespace dtl::ref {

using namespace dtl::ex;  // the exercise API's types (BufferView, GradBucket, ...)

void naive_all_reduce(Comm& comm, BufferView buf, ReduceOp op);
void ring_reduce_scatter(Comm& comm, BufferView buf, ReduceOp op);
void ring_all_gather(Comm& comm, BufferView buf);
void ring_all_reduce(Comm& comm, BufferView buf, ReduceOp op);
void all_reduce_by_reduce_scatter_all_gather(Comm& comm, BufferView buf, ReduceOp op);
void tree_reduce(Comm& comm, BufferView buf, ReduceOp op, int root);
void tree_broadcast(Comm& comm, BufferView buf, int root);
void tree_all_reduce(Comm& comm, BufferView buf, ReduceOp op);
void rhd_all_reduce(Comm& comm, BufferView buf, ReduceOp op);
AllReduceAnswer all_reduce_cost(const AllReduceQuestion& q);

}  // namespace dtl::ref
