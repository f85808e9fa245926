// Reference solution of the test lab's exercise (tests/test_lab/exercises/test_lab.h).
#include "tests/test_lab/exercises/test_lab.h"

namespace dtl::ex {

void weighted_sum(Comm& comm, float* x, std::size_t n) {
  const float weight = float(comm.rank() + 1);
  for (std::size_t i = 0; i < n; ++i) x[i] *= weight;
  comm.all_reduce(x, x, n, DType::f32, ReduceOp::sum);
}

}  // namespace dtl::ex
