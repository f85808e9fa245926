// Element types and reduction operators shared by every backend.
//
// f16 and bf16 are storage types: reductions on them widen to float, combine, and
// round back to nearest-even, which is what NCCL does for half types too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace dtl {

enum class DType : std::uint8_t { f32, f64, i32, i64, f16, bf16 };
enum class ReduceOp : std::uint8_t { sum, avg, max, min };

std::size_t dtype_size(DType t);
std::string_view dtype_name(DType t);          // "float", "double", "int32", ... (nccl-tests names)
std::string_view reduce_op_name(ReduceOp op);  // "sum", "avg", "max", "min"
// Accept "f32"/"float", ... and "sum", "avg", ...; a UsageError names `what` (the option).
DType parse_dtype(std::string_view name, std::string_view what = "--dtype");
ReduceOp parse_reduce_op(std::string_view name, std::string_view what = "--op");

// Maps a C++ element type to its DType (float -> f32, ...).
template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::f32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::f64;
}
template <>
constexpr DType dtype_of<std::int32_t>() {
  return DType::i32;
}
template <>
constexpr DType dtype_of<std::int64_t>() {
  return DType::i64;
}

// dst[i] = dst[i] (op) src[i] for i < count. `avg` combines like `sum`; the caller
// divides once at the end with finish_average, so averaging P buffers costs one division.
void reduce_into(void* dst, const void* src, std::size_t count, DType t, ReduceOp op);

// out[i] = in0[i] (op) in1[i] (op) ... over `n_inputs` buffers, in that order. The
// order is fixed so every rank that reduces the same chunk gets identical bits.
void reduce_many(void* out, const void* const* inputs, int n_inputs, std::size_t count, DType t, ReduceOp op);

// The all-reduce kernel: for every element, combine inputs 0..n_in-1 in that order
// (dividing by avg_divisor for avg) and write the result to all n_out outputs, in one
// pass over blocks of four cache lines held in registers. Outputs may alias inputs (in
// place). `streaming` writes with non-temporal stores (outputs that are not inputs).
void reduce_to_all(void* const* outs, int n_out, const void* const* inputs, int n_in, std::size_t count, DType t,
                   ReduceOp op, int avg_divisor, bool streaming);

// memcpy with non-temporal (streaming) stores: the destination lines are written
// without being read first, as large memcpy does. Call store_fence() before another
// thread may read the data.
void copy_streaming(void* dst, const void* src, std::size_t bytes);
void store_fence();

// For ReduceOp::avg: buf[i] /= divisor (integers divide with truncation). No-op otherwise.
// The buffer may be in host or device memory (core/memory/device_ops.h).
void finish_average(void* buf, std::size_t count, DType t, ReduceOp op, int divisor);

// buf[i] *= factor for the floating types (half types widen, multiply, round back);
// UsageError for integers. What "scale the averaged gradients by 1/P" is for any dtype.
// The buffer may be in host or device memory.
void scale_in_place(void* buf, std::size_t count, DType t, double factor);

// The host-memory bodies of the two above (what the host's DeviceOps run).
void divide_on_host(void* buf, std::size_t count, DType t, int divisor);
void scale_on_host(void* buf, std::size_t count, DType t, double factor);

// Whole buffers to and from float: dst[i] = float(src[i]); and dst[i] = T(src[i]), or with
// accumulate dst[i] = T(dst[i] + src[i]). For f32, f16 and bf16 (mixed precision).
void to_float(const void* src, DType t, float* dst, std::size_t count);
void from_float(const float* src, void* dst, DType t, std::size_t count, bool accumulate = false);

// Element i of a flat buffer of type t (host or device address arithmetic only).
inline std::byte* element(void* base, std::size_t i, DType t) {
  return static_cast<std::byte*>(base) + i * dtype_size(t);
}
inline const std::byte* element(const void* base, std::size_t i, DType t) {
  return static_cast<const std::byte*>(base) + i * dtype_size(t);
}

// Conversions used by the half types and by tests.
float bf16_to_float(std::uint16_t v);
std::uint16_t float_to_bf16(float f);  // round to nearest even
float f16_to_float(std::uint16_t v);
std::uint16_t float_to_f16(float f);

}  // namespace dtl
