// Reductions and half-precision conversions against plain float64 arithmetic.
#include "core/comm/dtype.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/util/units.h"

using namespace dtl;

TEST(Reduce, IntoMatchesScalarLoopForEveryOp) {
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min}) {
    std::vector<double> a{1.5, -2, 3, 7}, b{0.25, 5, -3, 7};
    std::vector<double> want(4);
    for (int i = 0; i < 4; ++i)
      want[i] = op == ReduceOp::max ? std::max(a[i], b[i]) : op == ReduceOp::min ? std::min(a[i], b[i]) : a[i] + b[i];
    reduce_into(a.data(), b.data(), 4, DType::f64, op);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(a[i], want[i]) << "op " << reduce_op_name(op) << " i " << i;
  }
}

TEST(Reduce, ManyFoldsInRankOrderAndMayAliasItsOutput) {
  const std::size_t n = 10000;  // more than one tile
  std::vector<std::vector<float>> in(5, std::vector<float>(n));
  for (int k = 0; k < 5; ++k)
    for (std::size_t i = 0; i < n; ++i) in[k][i] = float(k * 0.1 + i * 1e-3);
  std::vector<const void*> ptrs;
  for (auto& v : in) ptrs.push_back(v.data());
  std::vector<float> expected(n);
  for (std::size_t i = 0; i < n; ++i) {
    float acc = in[0][i];
    for (int k = 1; k < 5; ++k) acc += in[k][i];
    expected[i] = acc;
  }
  reduce_many(in[2].data(), ptrs.data(), 5, n, DType::f32, ReduceOp::sum);  // output aliases input 2
  float worst = 0;
  for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(in[2][i] - expected[i]));
  EXPECT_EQ(worst, 0.0f) << "largest difference " << worst;
}

TEST(Reduce, AverageDividesOnceAtTheEnd) {
  std::vector<std::int32_t> v{10, 11, -9};
  finish_average(v.data(), 3, DType::i32, ReduceOp::avg, 2);
  EXPECT_EQ(v, (std::vector<std::int32_t>{5, 5, -4}));
  finish_average(v.data(), 3, DType::i32, ReduceOp::sum, 2);  // not avg: unchanged
  EXPECT_EQ(v[0], 5);
}

TEST(HalfTypes, RoundTripExactValuesAndRoundToNearestEven) {
  for (float f : {0.0f, 1.0f, -2.5f, 1024.0f, 0.5f}) {
    EXPECT_EQ(bf16_to_float(float_to_bf16(f)), f);
    EXPECT_EQ(f16_to_float(float_to_f16(f)), f);
  }
  // 1 + 2^-8 is halfway between two bf16 values (1 and 1 + 2^-7): ties go to even (1).
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f + 1.0f / 256)), 1.0f);
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f + 3.0f / 256)), 1.0f + 1.0f / 64);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
  // A NaN whose payload is only in the 16 bits rounding drops would become infinity if
  // rounded like a number; it must stay a NaN. Infinities stay infinities.
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::bit_cast<float>(0x7f800001u)))));
  EXPECT_EQ(bf16_to_float(float_to_bf16(INFINITY)), INFINITY);
  EXPECT_EQ(bf16_to_float(float_to_bf16(-INFINITY)), -INFINITY);
}

TEST(HalfTypes, ReductionWidensToFloat) {
  std::vector<std::uint16_t> a{float_to_bf16(1.5f), float_to_bf16(-4)}, b{float_to_bf16(2.25f), float_to_bf16(3)};
  reduce_into(a.data(), b.data(), 2, DType::bf16, ReduceOp::sum);
  EXPECT_EQ(bf16_to_float(a[0]), 3.75f);
  EXPECT_EQ(bf16_to_float(a[1]), -1.0f);
}

TEST(StreamingCopy, CopiesEveryByteAtAnyAlignment) {
  std::vector<char> src(1000), dst(1100);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = char(i * 7);
  for (std::size_t off : {0, 1, 5, 16, 33})
    for (std::size_t len : {0, 3, 64, 130, 999}) {
      std::fill(dst.begin(), dst.end(), 0);
      copy_streaming(dst.data() + off, src.data(), len);
      store_fence();
      EXPECT_EQ(std::memcmp(dst.data() + off, src.data(), len), 0) << "offset " << off << " length " << len;
    }
}

TEST(Sizes, ParseBinaryUnitsAndRejectNonsense) {
  EXPECT_EQ(parse_size("4096"), 4096u);
  EXPECT_EQ(parse_size("64M"), 64u << 20);
  EXPECT_EQ(parse_size("1G"), 1u << 30);
  EXPECT_EQ(parse_size("8k"), 8192u);
  for (const char* bad : {"-3", "12Q", "", "M", "1.5M", "10MB", "99999999999999999999"})
    EXPECT_THROW(parse_size(bad), UsageError) << bad;
  EXPECT_EQ(format_size(64u << 20), "64M");
  EXPECT_EQ(format_size(1000), "1000");
}

TEST(Reduce, ToAllMatchesScalarFoldForEveryOpTailAndAliasing) {
  for (DType t : {DType::f32, DType::f64, DType::i32, DType::i64, DType::bf16})
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min})
      for (bool streaming : {false, true}) {
        const int P = 3;
        const std::size_t n = 1000;  // not a multiple of the block: exercises the tail
        const std::size_t es = dtype_size(t);
        std::vector<std::vector<char>> in(P, std::vector<char>(n * es)), out(P, std::vector<char>(n * es));
        for (int k = 0; k < P; ++k)
          for (std::size_t i = 0; i < n; ++i) {
            const double v = double(int((k * 7 + i * 3) % 13) - 6);
            switch (t) {
              case DType::f32: reinterpret_cast<float*>(in[k].data())[i] = float(v); break;
              case DType::f64: reinterpret_cast<double*>(in[k].data())[i] = v; break;
              case DType::i32: reinterpret_cast<std::int32_t*>(in[k].data())[i] = std::int32_t(v); break;
              case DType::i64: reinterpret_cast<std::int64_t*>(in[k].data())[i] = std::int64_t(v); break;
              default: reinterpret_cast<std::uint16_t*>(in[k].data())[i] = float_to_bf16(float(v)); break;
            }
          }
        // Reference: reduce_many + finish_average, a separate implementation.
        std::vector<char> want(n * es);
        std::vector<const void*> ins{in[0].data(), in[1].data(), in[2].data()};
        reduce_many(want.data(), ins.data(), P, n, t, op);
        finish_average(want.data(), n, t, op, P);
        // Output 0 aliases input 0 unless streaming (streaming is for separate outputs).
        std::vector<char> in0 = in[0];
        std::vector<const void*> ins2{in0.data(), in[1].data(), in[2].data()};
        std::vector<void*> outs{streaming ? out[0].data() : in0.data(), out[1].data(), out[2].data()};
        reduce_to_all(outs.data(), P, ins2.data(), P, n, t, op, P, streaming);
        store_fence();
        for (int q = 0; q < P; ++q)
          EXPECT_EQ(std::memcmp(outs[std::size_t(q)], want.data(), n * es), 0)
              << dtype_name(t) << " " << reduce_op_name(op) << " streaming=" << streaming << " output " << q;
      }
}

// The mixed-precision helpers: widening is exact, narrowing rounds to nearest even (with
// accumulate: of the sum), scaling works in every floating type and refuses integers.
TEST(HalfTypes, ToFromFloatAndScaleInPlace) {
  const std::vector<float> x{1.0f, -2.5f, 3.0f + 1.0f / 128, 1e-3f};
  for (DType t : {DType::f32, DType::bf16, DType::f16}) {
    std::vector<std::uint16_t> h(8);
    from_float(x.data(), h.data(), t, x.size());
    std::vector<float> back(4);
    to_float(h.data(), t, back.data(), 4);
    for (std::size_t i = 0; i < 4; ++i) {
      const float want = t == DType::f32    ? x[i]
                         : t == DType::bf16 ? bf16_to_float(float_to_bf16(x[i]))
                                            : f16_to_float(float_to_f16(x[i]));
      EXPECT_EQ(back[i], want) << dtype_name(t) << " element " << i;
    }
    from_float(x.data(), h.data(), t, x.size(), /*accumulate=*/true);  // now 2x, exactly (a power of two)
    to_float(h.data(), t, back.data(), 4);
    EXPECT_EQ(back[1], -5.0f) << dtype_name(t);
    scale_in_place(h.data(), 4, t, 0.25);
    to_float(h.data(), t, back.data(), 4);
    EXPECT_EQ(back[0], 0.5f) << dtype_name(t);
    EXPECT_EQ(back[1], -1.25f) << dtype_name(t);
  }
  std::vector<double> d{3.0, -1.0};
  scale_in_place(d.data(), 2, DType::f64, 0.5);
  EXPECT_EQ(d[0], 1.5);
  std::int32_t i = 4;
  EXPECT_THROW(scale_in_place(&i, 1, DType::i32, 0.5), UsageError);
}
