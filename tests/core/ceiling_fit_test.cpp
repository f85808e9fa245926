// The all-reduce ceiling (core/theory/ceiling.h) and the α–β fit (alpha_beta_fit.h) on
// crafted numbers: hand-derived traffic, and measurements made from known α and β.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "core/theory/alpha_beta_fit.h"
#include "core/theory/ceiling.h"

using namespace dtl;
using namespace dtl::theory;

TEST(Ceiling, ThreadsTrafficIsEveryInputReadAndEveryOutputWritten) {
  EXPECT_DOUBLE_EQ(all_reduce_min_traffic_bytes(Transport::shared_address_space, 4, 1e6), 8e6);  // 2·P·N
  EXPECT_DOUBLE_EQ(all_reduce_min_traffic_bytes(Transport::shared_address_space, 1, 1e6), 0);
  // busbw_max = N / (2PN/BW) · 2(P-1)/P = (P-1)/P² · BW
  EXPECT_DOUBLE_EQ(all_reduce_ceiling_busbw(Transport::shared_address_space, 4, 16e9), 3e9);
  EXPECT_DOUBLE_EQ(all_reduce_ceiling_busbw(Transport::shared_address_space, 2, 16e9), 4e9);
}

TEST(Ceiling, MpiTrafficCopiesEveryReceivedByte) {
  // 4(P-1)·N: 2(P-1)/P·N received by each of P ranks, each byte read and written once.
  EXPECT_DOUBLE_EQ(all_reduce_min_traffic_bytes(Transport::mpi_shared_memory, 4, 1e6), 12e6);
  EXPECT_DOUBLE_EQ(all_reduce_min_traffic_bytes(Transport::mpi_shared_memory, 2, 1e6), 4e6);  // = threads' 2PN
  EXPECT_DOUBLE_EQ(all_reduce_ceiling_busbw(Transport::mpi_shared_memory, 4, 16e9), 2e9);     // BW / (2P)
}

// A ceiling is a bound: an all-reduce that moves exactly its least traffic at the
// measured bandwidth lands at 100 %, and one that moves any more lands below it.
TEST(Ceiling, AnAllReduceMovingItsLeastTrafficReachesExactlyTheCeiling) {
  for (Transport t : {Transport::shared_address_space, Transport::mpi_shared_memory})
    for (int P : {2, 3, 4, 8}) {
      const double N = 64e6, bw = 20e9;
      const double fastest_time = all_reduce_min_traffic_bytes(t, P, N) / bw;
      const double busbw = N / fastest_time * 2.0 * (P - 1) / P;
      EXPECT_NEAR(busbw / all_reduce_ceiling_busbw(t, P, bw), 1.0, 1e-12) << P;
      const double ring_time = 5.0 * (P - 1) * N / bw;  // the point-to-point ring's traffic
      EXPECT_LE(N / ring_time * 2.0 * (P - 1) / P, all_reduce_ceiling_busbw(t, P, bw) * (1 + 1e-12)) << P;
    }
}

namespace {
std::vector<TimedRun> runs_from(double alpha, double beta, int P, double noise) {
  std::vector<TimedRun> runs;
  int i = 0;
  for (AlgorithmKind a : {AlgorithmKind::ring, AlgorithmKind::tree, AlgorithmKind::rhd, AlgorithmKind::naive})
    for (double N = 1024; N <= 64e6; N *= 8, ++i) {
      const double t = alpha * latency_steps(a, P, N) + beta * critical_bytes(a, P, N);
      runs.push_back({a, P, N, t * (1 + (i % 2 ? noise : -noise))});
    }
  return runs;
}
}  // namespace

TEST(AlphaBetaFit, RecoversTheAlphaAndBetaThatMadeTheTimes) {
  const AlphaBetaFit f = fit_alpha_beta(runs_from(5e-6, 1.0 / 10e9, 4, 0));
  EXPECT_NEAR(f.alpha_s, 5e-6, 1e-12);
  EXPECT_NEAR(f.beta_s_per_byte * 10e9, 1.0, 1e-9);
  EXPECT_LT(f.max_rel_error, 1e-9);
  const AlphaBetaFit noisy = fit_alpha_beta(runs_from(5e-6, 1.0 / 10e9, 4, 0.1));
  EXPECT_GT(noisy.max_rel_error, 0.05);  // ±10 % noise shows in the error ...
  EXPECT_LT(noisy.max_rel_error, 0.2);   // ... without wrecking the fit
  EXPECT_NEAR(noisy.alpha_s, 5e-6, 1e-6);
}

TEST(AlphaBetaFit, NeedsTwoPositiveRuns) {
  EXPECT_THROW(fit_alpha_beta({{AlgorithmKind::ring, 4, 1e3, 1e-5}}), dtl::UsageError);
  EXPECT_THROW(fit_alpha_beta({{AlgorithmKind::ring, 4, 1e3, 1e-5}, {AlgorithmKind::ring, 4, 1e6, 0}}),
               dtl::UsageError);
}

TEST(AlphaBetaFit, RingBeatsTreeAboveTheCrossover) {
  // P = 4: ring 6 steps and 1.5·N bytes, tree 4 steps and 4·N: equal at N = 2α/(2.5β).
  const Link link{10e-6, 1e9};
  const auto n = predicted_crossover(AlgorithmKind::ring, AlgorithmKind::tree, 4, link);
  ASSERT_TRUE(n.has_value());
  EXPECT_NEAR(*n, 2 * 10e-6 / 2.5 * 1e9, 1e-6);
  EXPECT_FALSE(predicted_crossover(AlgorithmKind::tree, AlgorithmKind::ring, 4, link)
                   .has_value());  // tree never wins at large N
  EXPECT_FALSE(predicted_crossover(AlgorithmKind::ring, AlgorithmKind::rhd, 4, link)
                   .has_value());  // rhd: fewer steps, same bytes
}

// Point-to-point: one-way times made from α + n·β give α and β back exactly; ±10 %
// alternating noise shows in the error but moves α and β only a little.
TEST(AlphaBetaFit, PointToPointRecoversTheLinkThatMadeTheTimes) {
  const double alpha = 20e-6, beta = 1.0 / 1e9;
  std::vector<TimedMessage> exact, noisy;
  int i = 0;
  for (double n = 1024; n <= 64e6; n *= 4, ++i) {
    exact.push_back({n, alpha + n * beta});
    noisy.push_back({n, (alpha + n * beta) * (1 + (i % 2 ? 0.1 : -0.1))});
  }
  const AlphaBetaFit f = fit_point_to_point(exact);
  EXPECT_NEAR(f.alpha_s, alpha, 1e-12);
  EXPECT_NEAR(f.beta_s_per_byte / beta, 1.0, 1e-9);
  EXPECT_LT(f.max_rel_error, 1e-9);
  EXPECT_NEAR(fit_error(f, TimedMessage{4096, 2 * (alpha + 4096 * beta)}), -0.5, 1e-9);  // half the measured time
  const AlphaBetaFit n = fit_point_to_point(noisy);
  EXPECT_GT(n.max_rel_error, 0.05);
  EXPECT_LT(n.max_rel_error, 0.2);
  EXPECT_NEAR(n.alpha_s / alpha, 1.0, 0.15);
  EXPECT_NEAR(n.beta_s_per_byte / beta, 1.0, 0.15);
  // The ring all-reduce it predicts: 2(P-1)·α + 2(P-1)/P·N·β.
  EXPECT_NEAR(all_reduce_cost(AlgorithmKind::ring, 4, 1e6, f.link()).time_s, 6 * alpha + 1.5e6 * beta, 1e-12);
}

TEST(AlphaBetaFit, PointToPointPinsANegativeTermToZero) {
  // Pure bandwidth, then pure latency: the other term must come out 0, not negative.
  const AlphaBetaFit bw = fit_point_to_point({{1e3, 1e-6 * 0.9}, {1e6, 1e-3}, {1e7, 1e-2}});
  EXPECT_GE(bw.alpha_s, 0);
  EXPECT_NEAR(bw.beta_s_per_byte, 1e-9, 1e-10);
  const AlphaBetaFit lat = fit_point_to_point({{1e3, 5e-6}, {1e6, 4.9e-6}});
  EXPECT_GE(lat.beta_s_per_byte, 0);
  EXPECT_NEAR(lat.alpha_s, 5e-6, 2e-7);
  EXPECT_THROW(fit_point_to_point({{1e3, 1e-5}}), dtl::UsageError);
  EXPECT_THROW(fit_point_to_point({{1e3, 1e-5}, {1e6, 0}}), dtl::UsageError);
}

TEST(AlphaBetaFit, PointToPointOfOneSizeStillFitsTheTimes) {  // collinear rows: one term alone
  for (double bytes : {0.0, 1e3}) {
    const AlphaBetaFit f = fit_point_to_point({{bytes, 1e-5}, {bytes, 1.2e-5}});
    EXPECT_GT(f.alpha_s + f.beta_s_per_byte * bytes, 0.9e-5) << bytes;
    EXPECT_LT(f.max_rel_error, 0.15) << bytes;
  }
}
