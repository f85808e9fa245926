// The test lab's exercise (tests/test_lab/labs/test_lab/test_lab.cpp). The test lab is a lab folder like
// labs/<lab>/, built only in tests: it shows what docs/reference.md's "Adding a lab" says it takes.
#pragma once

#include <cstddef>

#include "core/comm/comm.h"

namespace dtl::ex {

// Every rank holds x, n floats. Afterwards every rank holds the sum over the ranks of
// (rank + 1) · x_rank: each rank's vector weighted by its rank plus one. One library
// all-reduce.
void weighted_sum(Comm& comm, float* x, std::size_t n);

}  // namespace dtl::ex
