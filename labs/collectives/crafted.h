// Crafted inputs whose sums are exact in any order (nccl-tests' trick): small integers
// stored in any dtype. Every reduction order then gives the same bits, so a collective
// can be compared with an independent reference bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/comm/dtype.h"

namespace dtl {

// Value element i of rank r starts with: an integer in [-7, 7].
double crafted_value(int rank, std::size_t i);
void fill_crafted(void* buf, std::size_t count, DType t, int rank);
// The exact result of reducing element i over ranks 0..P-1 with `op` (avg: sum / P, as
// the dtype rounds it).
double crafted_expected(std::size_t i, int P, ReduceOp op, DType t);
// Stores v as element i of a buffer of dtype t (rounded as the dtype rounds).
void store_element(void* buf, std::size_t i, DType t, double v);
// Element i of a buffer as double (half types widened).
double element_as_double(const void* buf, std::size_t i, DType t);
// Number of elements that differ from crafted_expected, and the largest |difference|.
struct Mismatch {
  std::size_t wrong = 0;
  double max_abs_diff = 0;
};
Mismatch compare_with_crafted(const void* buf, std::size_t count, DType t, int P, ReduceOp op);

}  // namespace dtl
