// Compute time from shapes (core/theory/kernel_time.h), against numbers worked by hand and
// against the closed forms of Narayanan et al. 2021 (forward FLOPs of a layer 24·B·s·h²·(1 + s/6h)).
#include "core/theory/kernel_time.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/theory/plan.h"

namespace th = dtl::theory;

namespace {

th::ClusterSpec a100() { return th::cluster_preset("a100-80gb"); }

}  // namespace

TEST(KernelTime, AGemmsShareOfPeakIsItsTilesOverItsWavesTimesTheSms) {
  const th::ClusterSpec gpu = a100();  // 108 SMs, 128 × 128 tiles, 312 TFLOP/s
  // 8192 × 8192 output: 64 · 64 = 4096 tiles, ⌈4096 / 108⌉ = 38 waves: 4096 / (38 · 108) = 0.99805.
  const th::KernelTime big = th::gemm_time(gpu, {8192, 8192, 8192});
  EXPECT_DOUBLE_EQ(big.flops, 2.0 * 8192 * 8192 * 8192);
  EXPECT_NEAR(th::achieved_share(gpu, big), 4096.0 / (38 * 108), 1e-12);
  EXPECT_NEAR(big.seconds, 38 * 2.0 * 128 * 128 * 8192 / (312e12 / 108), 1e-15);
  // One row more: 65 · 64 = 4160 tiles, 39 waves; the useful work grows by 1/8192 only.
  const th::KernelTime ragged = th::gemm_time(gpu, {8193, 8192, 8192});
  EXPECT_NEAR(th::achieved_share(gpu, ragged), (8193.0 * 8192) / (39 * 108 * 128.0 * 128), 1e-12);
  // 109 tiles on 108 SMs: two waves for 109 tiles' work, 109 / 216 of the peak.
  const th::KernelTime one_more = th::gemm_time(gpu, {128, 128 * 109, 4096});
  EXPECT_NEAR(th::achieved_share(gpu, one_more), 109.0 / 216, 1e-12);
}

TEST(KernelTime, AThinGemmIsBoundByMemory) {
  const th::ClusterSpec gpu = a100();
  // k = 16: one wave of 108 tiles computes in 2·128·128·16 / (312 TFLOP/s / 108) = 0.18 µs,
  // but reading A and B and writing C moves (m·k + k·n + m·n) · 2 bytes: 1.95 µs at 2.039 TB/s.
  const th::KernelTime thin = th::gemm_time(gpu, {128 * 108, 128, 16});
  const double bytes = (128.0 * 108 * 16 + 16 * 128 + 128.0 * 108 * 128) * 2;
  EXPECT_DOUBLE_EQ(thin.bytes, bytes);
  EXPECT_NEAR(thin.seconds, bytes / 2.039e12, 1e-18);
  EXPECT_LT(th::achieved_share(gpu, thin), 0.1);
  EXPECT_NEAR(th::memory_time(gpu, 1e9).seconds, 1e9 / 2.039e12, 1e-18);
}

TEST(KernelTime, ALayersGemmFlopsAreNarayanansClosedForm) {
  const th::ClusterSpec gpu = a100();
  th::ModelSpec m;
  m.layers = 96, m.hidden = 12288, m.heads = 96, m.seq = 2048, m.vocab = 51200;
  for (const int t : {1, 8})
    for (const int b : {1, 4}) {
      const double B = b, s = m.seq, h = m.hidden;
      const double forward = 24 * B * s * h * h * (1 + s / (6 * h)) / t;
      const th::LayerTime none = th::transformer_layer_time(gpu, m, b, t, th::Recompute::none);
      EXPECT_NEAR(none.forward_gemm.flops / forward, 1, 1e-12) << "t " << t << " b " << b;
      EXPECT_NEAR(none.backward_gemm.flops / forward, 2, 1e-12);
      const th::LayerTime full = th::transformer_layer_time(gpu, m, b, t, th::Recompute::full);
      EXPECT_NEAR(full.backward_gemm.flops / forward, 3, 1e-12) << "full recomputation reruns the forward";
      const th::LayerTime selective = th::transformer_layer_time(gpu, m, b, t, th::Recompute::selective);
      EXPECT_NEAR(selective.backward_gemm.flops - none.backward_gemm.flops, 4 * B * s * s * h / t, 1e-3 * forward)
          << "selective reruns only Q·Kᵀ and P·V";
      // The LM head: 2·B·s·h·V/t forward, twice that backward.
      const th::LayerTime head = th::lm_head_time(gpu, m, b, t);
      EXPECT_NEAR(head.forward_gemm.flops, 2 * B * s * h * m.vocab / t, 1e-3);
      EXPECT_NEAR(head.backward_gemm.flops, 4 * B * s * h * m.vocab / t, 1e-3);
    }
}

TEST(KernelTime, LargerModelsReachMoreOfThePeak) {
  const th::ClusterSpec gpu = a100();
  th::ModelSpec small, large;
  small.layers = 12, small.hidden = 768, small.heads = 12, small.seq = 1024;
  large.layers = 96, large.hidden = 12288, large.heads = 96, large.seq = 2048;
  auto share = [&](const th::ModelSpec& m) {
    const th::LayerTime l = th::transformer_layer_time(gpu, m, 1, 1, th::Recompute::none);
    th::KernelTime all = l.forward_gemm;
    all += l.forward_memory;
    return th::achieved_share(gpu, all);
  };
  const double s = share(small), l = share(large);
  std::printf("share of peak, forward of one layer, b = 1: GPT-2 small %.3f, GPT-3 175B %.3f\n", s, l);
  EXPECT_GT(l, s + 0.1);
  EXPECT_GT(l, 0.8);
  EXPECT_LT(l, 1.0);
}
