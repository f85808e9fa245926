#include "core/comm/mpi/mpi_types.h"

#include <climits>
#include <string>

#include "core/comm/mpi/mpi_check.h"
#include "core/error.h"

namespace dtl {

namespace {
// MPI has no half types: user-defined ops widen to float through reduce_into.
template <DType T, ReduceOp Op>
void half_op(void* in, void* inout, int* len, MPI_Datatype*) {
  reduce_into(inout, in, std::size_t(*len), T, Op);
}
}  // namespace

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::f32: return MPI_FLOAT;
    case DType::f64: return MPI_DOUBLE;
    case DType::i32: return MPI_INT32_T;
    case DType::i64: return MPI_INT64_T;
    case DType::f16:
    case DType::bf16: return MPI_UINT16_T;  // combined by our own MPI_Op (below)
  }
  return MPI_BYTE;
}

MPI_Op mpi_op(DType t, ReduceOp op) {
  if (t == DType::f16 || t == DType::bf16) {
    static MPI_Op ops[2][3] = {};  // created once, after MPI_Init (single-threaded use)
    const int ti = t == DType::f16 ? 0 : 1, oi = op == ReduceOp::max ? 1 : op == ReduceOp::min ? 2 : 0;
    if (ops[ti][oi] == MPI_Op{}) {
      MPI_User_function* fns[2][3] = {
          {half_op<DType::f16, ReduceOp::sum>, half_op<DType::f16, ReduceOp::max>, half_op<DType::f16, ReduceOp::min>},
          {half_op<DType::bf16, ReduceOp::sum>, half_op<DType::bf16, ReduceOp::max>,
           half_op<DType::bf16, ReduceOp::min>}};
      DTL_MPI_CHECK(MPI_Op_create(fns[ti][oi], 1, &ops[ti][oi]));
    }
    return ops[ti][oi];
  }
  switch (op) {
    case ReduceOp::max: return MPI_MAX;
    case ReduceOp::min: return MPI_MIN;
    default: return MPI_SUM;  // avg = sum, divided on completion
  }
}

std::vector<int> as_ints(const std::vector<std::size_t>& v, const char* what) {
  std::vector<int> out;
  out.reserve(v.size());
  for (std::size_t n : v) out.push_back(as_int(n, what));
  return out;
}

int as_int(std::size_t n, const char* what) {
  if (n > std::size_t(INT_MAX))
    throw Error(std::string(what) + " of " + std::to_string(n) + " elements exceeds MPI's int count; split the buffer");
  return int(n);
}

}  // namespace dtl
