// Building blocks the CPU kernels vectorize with, shared by kernels.cpp (GELU) and
// attention.cpp / transformer_kernels.cpp (softmax, LayerNorm). Internal to kernels/cpu.
//
// The rule they keep: the same bits on every machine. The kernels library is compiled with
// -ffp-contract=off (no fused multiply-add the source does not write) and without
// -ffast-math, so the compiler never reorders a sum; where a loop should still run in SIMD
// registers, the source itself spells out the independent partial sums (lane_sum).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace dtl::kernels::detail {

// An element-wise loop compiled three times, for AVX-512 (x86-64-v4), AVX2 + FMA (v3) and
// the baseline; the loader picks the CPU's best (GCC's target_clones, an ifunc). The binary
// stays portable and the loops run 5-9x faster on a current core (the GELU forward over 2M
// floats: 5.4 -> 1.1 ms). With -ffp-contract=off every clone gives the baseline's bits.
// Not under a sanitizer: the loader calls the clones' resolver before the sanitizer's
// runtime has started, and its instrumented code crashes there (a segfault at start-up).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_THREAD__) && \
    !defined(__SANITIZE_ADDRESS__)
#define DTL_ELEMENTWISE_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define DTL_ELEMENTWISE_CLONES
#endif

// e^x for x <= 0 without a library call, so loops over it vectorize: x = k·ln2 + r with
// |r| <= ln2/2 (ln2 split in two constants, Cody and Waite, so r is exact), e^r from
// Cephes' degree-6 polynomial (about 1 ulp), 2^k made directly in the exponent bits.
// Below -87, e^x is under float's smallest normal; x is held there (e^-87 ≈ 1.6e-38).
inline float exp_nonpositive(float x) {
  // x = max(x, -87) on the bits: for x <= 0 the magnitude grows with the unsigned bits, and
  // an integer min stays a select (a float one would become a branch and stop vectorizing).
  // -0.0f and +0.0f both give 1.
  constexpr std::uint32_t kMinus87 = std::bit_cast<std::uint32_t>(-87.0f);
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  x = std::bit_cast<float>(bits < kMinus87 ? bits : kMinus87);
  const int k = static_cast<int>(x * 1.44269504f - 0.5f);  // x/ln2 rounded to nearest (x <= 0)
  const float r = (x - float(k) * 0.693359375f) - float(k) * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  return p * std::bit_cast<float>((k + 127) << 23);
}

// tanh(u) = sign(u)·(1 - e)/(1 + e) with e = e^(-2|u|) in (0, 1]: no overflow for any u.
inline float fast_tanh(float u) {
  const float e = exp_nonpositive(-2.0f * std::fabs(u));
  return std::copysign((1.0f - e) / (1.0f + e), u);
}

// Partial sums in 16 lanes: element i goes to lane i % 16, the lanes are added in a fixed
// order at the end. Sixteen independent sums are what a SIMD register holds (two AVX2
// registers, one AVX-512), so the loop vectorizes without the compiler reassociating
// anything, and the result is the same in every clone and on every machine.
constexpr int kLanes = 16;

template <class Term>
inline float lane_sum(int n, Term&& term) {
  float acc[kLanes] = {};
  int i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += term(i + l);
  for (int l = 0; i < n; ++i, ++l) acc[l] += term(i);
  float sum = 0;
  for (int l = 0; l < kLanes; ++l) sum += acc[l];
  return sum;
}

// The largest of x[0..n) (n >= 1), in lanes like lane_sum (max is exact in any order).
inline float lane_max(const float* x, int n) {
  float acc[kLanes];
  for (int l = 0; l < kLanes; ++l) acc[l] = x[0];
  int i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] = acc[l] > x[i + l] ? acc[l] : x[i + l];
  for (int l = 0; i < n; ++i, ++l) acc[l] = acc[l] > x[i] ? acc[l] : x[i];
  float m = acc[0];
  for (int l = 1; l < kLanes; ++l) m = m > acc[l] ? m : acc[l];
  return m;
}

}  // namespace dtl::kernels::detail
