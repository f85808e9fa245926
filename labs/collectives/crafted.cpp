#include "labs/collectives/crafted.h"

#include <cmath>

#include "labs/measure.h"

namespace dtl {

double crafted_value(int rank, std::size_t i) { return double(std::int64_t((rank * 7 + i * 13) % 15) - 7); }

void store_element(void* buf, std::size_t i, DType t, double v) {
  switch (t) {
    case DType::f32: static_cast<float*>(buf)[i] = float(v); break;
    case DType::f64: static_cast<double*>(buf)[i] = v; break;
    case DType::i32: static_cast<std::int32_t*>(buf)[i] = std::int32_t(v); break;
    case DType::i64: static_cast<std::int64_t*>(buf)[i] = std::int64_t(v); break;
    case DType::f16: static_cast<std::uint16_t*>(buf)[i] = float_to_f16(float(v)); break;
    case DType::bf16: static_cast<std::uint16_t*>(buf)[i] = float_to_bf16(float(v)); break;
  }
}

double element_as_double(const void* buf, std::size_t i, DType t) {
  switch (t) {
    case DType::f32: return static_cast<const float*>(buf)[i];
    case DType::f64: return static_cast<const double*>(buf)[i];
    case DType::i32: return static_cast<const std::int32_t*>(buf)[i];
    case DType::i64: return double(static_cast<const std::int64_t*>(buf)[i]);
    case DType::f16: return f16_to_float(static_cast<const std::uint16_t*>(buf)[i]);
    case DType::bf16: return bf16_to_float(static_cast<const std::uint16_t*>(buf)[i]);
  }
  return 0;
}

void fill_crafted(void* buf, std::size_t count, DType t, int rank) {
  for (std::size_t i = 0; i < count; ++i) store_element(buf, i, t, crafted_value(rank, i));
}

double crafted_expected(std::size_t i, int P, ReduceOp op, DType t) {
  double acc = crafted_value(0, i);
  for (int r = 1; r < P; ++r) {
    const double v = crafted_value(r, i);
    acc = op == ReduceOp::max ? std::max(acc, v) : op == ReduceOp::min ? std::min(acc, v) : acc + v;
  }
  if (op != ReduceOp::avg) return acc;
  // Divide the way the dtype does: store the sum, divide in that type, read back.
  alignas(8) unsigned char tmp[8];
  store_element(tmp, 0, t, acc);
  finish_average(tmp, 1, t, op, P);
  return element_as_double(tmp, 0, t);
}

Mismatch compare_with_crafted(const void* buf, std::size_t count, DType t, int P, ReduceOp op) {
  Mismatch m;
  for (std::size_t i = 0; i < count; ++i) {
    const double d = std::fabs(element_as_double(buf, i, t) - crafted_expected(i, P, op, t));
    if (d != 0) ++m.wrong;
    m.max_abs_diff = larger_difference(m.max_abs_diff, d);
  }
  return m;
}

}  // namespace dtl
