// How dtlab's element types and reductions map onto MPI's: MPI has no half types, so f16
// and bf16 travel as 16-bit words and are combined by user-defined ops that widen to float
// (reduce_into, the same rounding as every other backend).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

#include "core/comm/dtype.h"

namespace dtl {

MPI_Datatype mpi_type(DType t);
// The op for `op` on `t` (avg is a sum, divided on completion). Call after MPI_Init.
MPI_Op mpi_op(DType t, ReduceOp op);
// n as MPI's int count; Error naming `what` past INT_MAX elements.
int as_int(std::size_t n, const char* what);
std::vector<int> as_ints(const std::vector<std::size_t>& v, const char* what);  // each as_int

}  // namespace dtl
