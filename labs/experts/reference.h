// The reference solutions of the experts exercises, in namespace dtl::ref: each has the type
// (and so the contract) of its namesake in labs/experts/exercises.h. The exercise track runs
// them where the learner has not written an exercise yet (exercises/unwritten.h); they are
// compiled from labs/experts/solutions.cpp (exercises/reference_copy.cmake).
#pragma once

#include "labs/experts/exercises.h"

namespace dtl::ref {

using namespace dtl::ex;  // the exercise API's types (Routing, Dispatch)

decltype(ex::route_top_k) route_top_k;
decltype(ex::kept_slots) kept_slots;
decltype(ex::plan_dispatch) plan_dispatch;
decltype(ex::combine_rows) combine_rows;
decltype(ex::combine_backward) combine_backward;

}  // namespace dtl::ref
