#include "core/comm/dtype.h"

#include <emmintrin.h>  // SSE2: baseline on x86-64

#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/memory/device_ops.h"

namespace dtl {

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::f16: return 2;
    case DType::bf16: return 2;
  }
  throw Error("unknown dtype");
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
    case DType::f16: return "half";
    case DType::bf16: return "bfloat16";
  }
  return "?";
}

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::avg: return "avg";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
  }
  return "?";
}

DType parse_dtype(std::string_view s, std::string_view what) {
  if (s == "f32" || s == "float" || s == "float32") return DType::f32;
  if (s == "f64" || s == "double" || s == "float64") return DType::f64;
  if (s == "i32" || s == "int32" || s == "int") return DType::i32;
  if (s == "i64" || s == "int64") return DType::i64;
  if (s == "f16" || s == "half" || s == "float16") return DType::f16;
  if (s == "bf16" || s == "bfloat16") return DType::bf16;
  throw UsageError(std::string(what) + " '" + std::string(s) + "' is not a type; use one of f32 f64 i32 i64 f16 bf16");
}

ReduceOp parse_reduce_op(std::string_view s, std::string_view what) {
  if (s == "sum") return ReduceOp::sum;
  if (s == "avg") return ReduceOp::avg;
  if (s == "max") return ReduceOp::max;
  if (s == "min") return ReduceOp::min;
  throw UsageError(std::string(what) + " '" + std::string(s) + "' is not a reduction; use one of sum avg max min");
}

// ---- half-precision conversions ----------------------------------------------------

float bf16_to_float(std::uint16_t v) { return std::bit_cast<float>(std::uint32_t(v) << 16); }

// Branch-free (an integer select), so loops over it vectorize.
std::uint16_t float_to_bf16(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;  // round to nearest, ties to even
  const std::uint32_t quiet_nan = (u >> 16) | 0x40u;                     // keep NaN a NaN
  return std::uint16_t((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

float f16_to_float(std::uint16_t v) { return float(std::bit_cast<_Float16>(v)); }
std::uint16_t float_to_f16(float f) { return std::bit_cast<std::uint16_t>(_Float16(f)); }

// ---- reductions --------------------------------------------------------------------

namespace {

template <typename T>
inline T combine(T a, T b, ReduceOp op) {
  switch (op) {
    case ReduceOp::max: return a > b ? a : b;
    case ReduceOp::min: return a < b ? a : b;
    default: return a + b;  // sum and avg
  }
}

// The op is hoisted out of the loop so each inner loop is one simple, vectorizable form.
template <typename T>
void reduce_into_typed(T* __restrict dst, const T* __restrict src, std::size_t n, ReduceOp op) {
  if (op == ReduceOp::max) {
    for (std::size_t i = 0; i < n; ++i) dst[i] = dst[i] > src[i] ? dst[i] : src[i];
  } else if (op == ReduceOp::min) {
    for (std::size_t i = 0; i < n; ++i) dst[i] = dst[i] < src[i] ? dst[i] : src[i];
  } else {
    for (std::size_t i = 0; i < n; ++i) dst[i] += src[i];
  }
}

// Half types: widen, combine, round back. One loop per operator (the sum's vectorizes).
template <float (*ToF)(std::uint16_t), std::uint16_t (*FromF)(float)>
void reduce_into_half(std::uint16_t* dst, const std::uint16_t* src, std::size_t n, ReduceOp op) {
  if (op == ReduceOp::max) {
    for (std::size_t i = 0; i < n; ++i) dst[i] = FromF(combine(ToF(dst[i]), ToF(src[i]), ReduceOp::max));
  } else if (op == ReduceOp::min) {
    for (std::size_t i = 0; i < n; ++i) dst[i] = FromF(combine(ToF(dst[i]), ToF(src[i]), ReduceOp::min));
  } else {
    for (std::size_t i = 0; i < n; ++i) dst[i] = FromF(ToF(dst[i]) + ToF(src[i]));
  }
}

template <typename T>
void reduce_many_typed(T* out, const void* const* inputs, int n_in, std::size_t n, ReduceOp op) {
  // A receive that reduces into its own buffer (out = in0 op in1, the ring's recv_reduce):
  // one pass, dst op= src, no tile copies; the same arithmetic in the same order.
  if (n_in == 2 && inputs[0] == out && inputs[1] != out) {
    reduce_into_typed(out, static_cast<const T*>(inputs[1]), n, op);
    return;
  }
  // Tiles keep `acc` in L1 while every input streams through once.
  constexpr std::size_t kTile = 4096 / sizeof(T);
  alignas(64) T acc[kTile];
  for (std::size_t base = 0; base < n; base += kTile) {
    const std::size_t len = std::min(kTile, n - base);
    std::memcpy(acc, static_cast<const T*>(inputs[0]) + base, len * sizeof(T));
    for (int k = 1; k < n_in; ++k) reduce_into_typed(acc, static_cast<const T*>(inputs[k]) + base, len, op);
    std::memcpy(out + base, acc, len * sizeof(T));
  }
}

template <typename T>
void divide(T* buf, std::size_t n, int d) {
  for (std::size_t i = 0; i < n; ++i) buf[i] = T(buf[i] / T(d));
}

}  // namespace

void reduce_into(void* dst, const void* src, std::size_t n, DType t, ReduceOp op) {
  switch (t) {
    case DType::f32: return reduce_into_typed(static_cast<float*>(dst), static_cast<const float*>(src), n, op);
    case DType::f64: return reduce_into_typed(static_cast<double*>(dst), static_cast<const double*>(src), n, op);
    case DType::i32:
      return reduce_into_typed(static_cast<std::int32_t*>(dst), static_cast<const std::int32_t*>(src), n, op);
    case DType::i64:
      return reduce_into_typed(static_cast<std::int64_t*>(dst), static_cast<const std::int64_t*>(src), n, op);
    case DType::f16:
      return reduce_into_half<f16_to_float, float_to_f16>(static_cast<std::uint16_t*>(dst),
                                                          static_cast<const std::uint16_t*>(src), n, op);
    case DType::bf16:
      return reduce_into_half<bf16_to_float, float_to_bf16>(static_cast<std::uint16_t*>(dst),
                                                            static_cast<const std::uint16_t*>(src), n, op);
  }
}

void reduce_many(void* out, const void* const* inputs, int n_in, std::size_t n, DType t, ReduceOp op) {
  switch (t) {
    case DType::f32: return reduce_many_typed(static_cast<float*>(out), inputs, n_in, n, op);
    case DType::f64: return reduce_many_typed(static_cast<double*>(out), inputs, n_in, n, op);
    case DType::i32: return reduce_many_typed(static_cast<std::int32_t*>(out), inputs, n_in, n, op);
    case DType::i64: return reduce_many_typed(static_cast<std::int64_t*>(out), inputs, n_in, n, op);
    case DType::f16:
    case DType::bf16: {
      // Sequential left fold, same order as reduce_into, through a tile (out may alias an input).
      const std::size_t es = dtype_size(t);
      constexpr std::size_t kTile = 2048;
      alignas(64) std::uint16_t acc[kTile];
      for (std::size_t base = 0; base < n; base += kTile) {
        const std::size_t len = std::min(kTile, n - base);
        std::memcpy(acc, static_cast<const char*>(inputs[0]) + base * es, len * es);
        for (int k = 1; k < n_in; ++k) reduce_into(acc, static_cast<const char*>(inputs[k]) + base * es, len, t, op);
        std::memcpy(static_cast<char*>(out) + base * es, acc, len * es);
      }
      return;
    }
  }
}

namespace {

// One block of kBlock elements: small enough to live in registers, large enough that
// every input and output stream moves whole cache lines.
template <typename T, ReduceOp Op>
inline void reduce_block(T* const* outs, int n_out, const T* const* ins, int n_in, std::size_t i, T divisor,
                         bool streaming) {
  constexpr std::size_t kBlock = 256 / sizeof(T);
  alignas(64) T acc[kBlock];
  for (std::size_t j = 0; j < kBlock; ++j) acc[j] = ins[0][i + j];
  for (int k = 1; k < n_in; ++k) {
    const T* in = ins[k] + i;
    for (std::size_t j = 0; j < kBlock; ++j) {
      if constexpr (Op == ReduceOp::max)
        acc[j] = acc[j] > in[j] ? acc[j] : in[j];
      else if constexpr (Op == ReduceOp::min)
        acc[j] = acc[j] < in[j] ? acc[j] : in[j];
      else
        acc[j] += in[j];
    }
  }
  if constexpr (Op == ReduceOp::avg)
    for (std::size_t j = 0; j < kBlock; ++j) acc[j] = T(acc[j] / divisor);
  for (int q = 0; q < n_out; ++q) {
    if (streaming)
      copy_streaming(outs[q] + i, acc, sizeof acc);
    else
      std::memcpy(outs[q] + i, acc, sizeof acc);
  }
}

template <typename T, ReduceOp Op>
void reduce_to_all_typed(void* const* outs_v, int n_out, const void* const* ins_v, int n_in, std::size_t n, int divisor,
                         bool streaming) {
  constexpr std::size_t kBlock = 256 / sizeof(T);
  T* outs[64];
  const T* ins[64];
  for (int q = 0; q < n_out; ++q) outs[q] = static_cast<T*>(outs_v[q]);
  for (int k = 0; k < n_in; ++k) ins[k] = static_cast<const T*>(ins_v[k]);
  const std::size_t whole = n / kBlock * kBlock;
  for (std::size_t i = 0; i < whole; i += kBlock) reduce_block<T, Op>(outs, n_out, ins, n_in, i, T(divisor), streaming);
  for (std::size_t i = whole; i < n; ++i) {  // the tail, element by element, same order
    T acc = ins[0][i];
    for (int k = 1; k < n_in; ++k) {
      if constexpr (Op == ReduceOp::max)
        acc = acc > ins[k][i] ? acc : ins[k][i];
      else if constexpr (Op == ReduceOp::min)
        acc = acc < ins[k][i] ? acc : ins[k][i];
      else
        acc += ins[k][i];
    }
    if constexpr (Op == ReduceOp::avg) acc = T(acc / T(divisor));
    for (int q = 0; q < n_out; ++q) outs[q][i] = acc;
  }
}

template <typename T>
void reduce_to_all_op(void* const* outs, int n_out, const void* const* ins, int n_in, std::size_t n, ReduceOp op,
                      int divisor, bool streaming) {
  switch (op) {
    case ReduceOp::sum: return reduce_to_all_typed<T, ReduceOp::sum>(outs, n_out, ins, n_in, n, divisor, streaming);
    case ReduceOp::avg: return reduce_to_all_typed<T, ReduceOp::avg>(outs, n_out, ins, n_in, n, divisor, streaming);
    case ReduceOp::max: return reduce_to_all_typed<T, ReduceOp::max>(outs, n_out, ins, n_in, n, divisor, streaming);
    case ReduceOp::min: return reduce_to_all_typed<T, ReduceOp::min>(outs, n_out, ins, n_in, n, divisor, streaming);
  }
}

}  // namespace

void reduce_to_all(void* const* outs, int n_out, const void* const* ins, int n_in, std::size_t n, DType t, ReduceOp op,
                   int divisor, bool streaming) {
  if (n_in > 64 || n_out > 64 || t == DType::f16 || t == DType::bf16) {
    // Wide groups and half types: reduce into a tile, then copy it out.
    const std::size_t es = dtype_size(t);
    constexpr std::size_t kTileBytes = 8192;
    const std::size_t tile = kTileBytes / es;
    alignas(64) char acc[kTileBytes];
    for (std::size_t off = 0; off < n; off += tile) {
      const std::size_t len = std::min(tile, n - off);
      std::vector<const void*> in(static_cast<std::size_t>(n_in));
      for (int k = 0; k < n_in; ++k) in[std::size_t(k)] = static_cast<const char*>(ins[k]) + off * es;
      reduce_many(acc, in.data(), n_in, len, t, op);
      finish_average(acc, len, t, op, divisor);
      for (int q = 0; q < n_out; ++q) std::memcpy(static_cast<char*>(outs[q]) + off * es, acc, len * es);
    }
    return;
  }
  switch (t) {
    case DType::f32: return reduce_to_all_op<float>(outs, n_out, ins, n_in, n, op, divisor, streaming);
    case DType::f64: return reduce_to_all_op<double>(outs, n_out, ins, n_in, n, op, divisor, streaming);
    case DType::i32: return reduce_to_all_op<std::int32_t>(outs, n_out, ins, n_in, n, op, divisor, streaming);
    case DType::i64: return reduce_to_all_op<std::int64_t>(outs, n_out, ins, n_in, n, op, divisor, streaming);
    default: return;
  }
}

void copy_streaming(void* dst, const void* src, std::size_t bytes) {
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  const std::size_t head = std::min(bytes, (16 - reinterpret_cast<std::uintptr_t>(d) % 16) % 16);
  std::memcpy(d, s, head);  // up to the first 16-byte boundary of the destination
  std::size_t i = head;
  for (; i + 64 <= bytes; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), e);
  }
  std::memcpy(d + i, s + i, bytes - i);
}

void store_fence() { _mm_sfence(); }

void finish_average(void* buf, std::size_t n, DType t, ReduceOp op, int d) {
  if (op != ReduceOp::avg || d == 1) return;
  device_ops_for(buf).scale(buf, n, t, 0.0, d);  // the buffer may live on a GPU
}

void scale_in_place(void* buf, std::size_t n, DType t, double factor) {
  if (t != DType::f32 && t != DType::f64 && t != DType::f16 && t != DType::bf16)
    throw UsageError("scale_in_place: " + std::string(dtype_name(t)) + " is not a floating type");
  device_ops_for(buf).scale(buf, n, t, factor, 0);
}

void divide_on_host(void* buf, std::size_t n, DType t, int d) {
  switch (t) {
    case DType::f32: return divide(static_cast<float*>(buf), n, d);
    case DType::f64: return divide(static_cast<double*>(buf), n, d);
    case DType::i32: return divide(static_cast<std::int32_t*>(buf), n, d);
    case DType::i64: return divide(static_cast<std::int64_t*>(buf), n, d);
    case DType::f16: {
      auto* p = static_cast<std::uint16_t*>(buf);
      for (std::size_t i = 0; i < n; ++i) p[i] = float_to_f16(f16_to_float(p[i]) / float(d));
      return;
    }
    case DType::bf16: {
      auto* p = static_cast<std::uint16_t*>(buf);
      for (std::size_t i = 0; i < n; ++i) p[i] = float_to_bf16(bf16_to_float(p[i]) / float(d));
      return;
    }
  }
}

void scale_on_host(void* buf, std::size_t n, DType t, double factor) {
  switch (t) {
    case DType::f32: {
      auto* p = static_cast<float*>(buf);
      const float f = float(factor);
      for (std::size_t i = 0; i < n; ++i) p[i] *= f;
      return;
    }
    case DType::f64: {
      auto* p = static_cast<double*>(buf);
      for (std::size_t i = 0; i < n; ++i) p[i] *= factor;
      return;
    }
    case DType::f16:
    case DType::bf16: {
      float tmp[4096];  // in blocks on the stack: no full-size float copy, no allocation
      for (std::size_t i = 0; i < n; i += 4096) {
        const std::size_t m = std::min<std::size_t>(4096, n - i);
        void* at = static_cast<std::uint16_t*>(buf) + i;
        to_float(at, t, tmp, m);
        for (std::size_t j = 0; j < m; ++j) tmp[j] *= float(factor);
        from_float(tmp, at, t, m);
      }
      return;
    }
    default: throw UsageError("scale: " + std::string(dtype_name(t)) + " is not a floating type");
  }
}

void to_float(const void* src, DType t, float* dst, std::size_t n) {
  const auto* h = static_cast<const std::uint16_t*>(src);
  switch (t) {
    case DType::f32: std::memcpy(dst, src, n * sizeof(float)); return;
    case DType::bf16:
      for (std::size_t i = 0; i < n; ++i) dst[i] = bf16_to_float(h[i]);
      return;
    case DType::f16:
      for (std::size_t i = 0; i < n; ++i) dst[i] = f16_to_float(h[i]);
      return;
    default: throw UsageError("to_float: " + std::string(dtype_name(t)) + " is not f32, f16 or bf16");
  }
}

void from_float(const float* src, void* dst, DType t, std::size_t n, bool accumulate) {
  auto* h = static_cast<std::uint16_t*>(dst);
  switch (t) {
    case DType::f32: {
      auto* f = static_cast<float*>(dst);
      if (accumulate)
        for (std::size_t i = 0; i < n; ++i) f[i] += src[i];
      else
        std::memcpy(dst, src, n * sizeof(float));
      return;
    }
    case DType::bf16:
      for (std::size_t i = 0; i < n; ++i) h[i] = float_to_bf16(accumulate ? bf16_to_float(h[i]) + src[i] : src[i]);
      return;
    case DType::f16:
      for (std::size_t i = 0; i < n; ++i) h[i] = float_to_f16(accumulate ? f16_to_float(h[i]) + src[i] : src[i]);
      return;
    default: throw UsageError("from_float: " + std::string(dtype_name(t)) + " is not f32, f16 or bf16");
  }
}

}  // namespace dtl
