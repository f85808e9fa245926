// The checkpoint interval and goodput (core/theory/goodput.h) against an independent computation:
// the expected-time expressions written out again here and minimised by brute force in float64
// (golden-section search), and the lost work by numerical integration of the exponential density.
#include "core/theory/goodput.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>

#include "core/error.h"

namespace th = dtl::theory;

namespace {

// The τ that minimises f on [lo, hi] (f unimodal there), to float64's resolution.
double golden_minimum(const std::function<double(double)>& f, double lo, double hi) {
  const double g = (std::sqrt(5.0) - 1) / 2;
  for (int i = 0; i < 400; ++i) {
    const double c = hi - g * (hi - lo), d = lo + g * (hi - lo);
    if (f(c) < f(d))
      hi = d;
    else
      lo = c;
  }
  return (lo + hi) / 2;
}

// Daly's exact expected wall time per unit of work (eq. 20), written independently of goodput.cpp.
double wall_per_work(double tau, double delta, double restart, double mtbf) {
  return mtbf * std::exp(restart / mtbf) * (std::exp((tau + delta) / mtbf) - 1) / tau;
}

struct Case {
  double delta, mtbf;
};
// δ/M from 0.0003 (a 3 s write on the 16k-GPU cluster of docs/planning.md) to 1/6.
constexpr Case kCases[] = {{2.83, 11134}, {60, 3 * 3600}, {300, 3600}, {600, 3600}};

}  // namespace

TEST(Goodput, YoungMinimisesTheFirstOrderWaste) {
  for (const Case& c : kCases) {
    const double brute = golden_minimum([&](double t) { return c.delta / t + t / (2 * c.mtbf); }, 1e-3, 10 * c.mtbf);
    const double young = th::young_interval(c.delta, c.mtbf);
    std::printf("δ %g s, M %g s: Young %.6f s, brute force %.6f s, relative difference %.2e\n", c.delta, c.mtbf, young,
                brute, std::fabs(young - brute) / brute);
    EXPECT_NEAR(young, brute, 1e-6 * brute);
  }
}

TEST(Goodput, DalyIsCloseToTheExactOptimumAndCloserThanYoung) {
  for (const Case& c : kCases) {
    const double brute =
        golden_minimum([&](double t) { return wall_per_work(t, c.delta, 0, c.mtbf); }, 1e-3, 10 * c.mtbf);
    const double daly = th::daly_interval(c.delta, c.mtbf), young = th::young_interval(c.delta, c.mtbf);
    std::printf("δ %g s, M %g s: Daly %.4f s, exact optimum %.4f s (rel. %.2e), Young %.4f s (rel. %.2e)\n", c.delta,
                c.mtbf, daly, brute, std::fabs(daly - brute) / brute, young, std::fabs(young - brute) / brute);
    EXPECT_NEAR(daly, brute, 1e-3 * brute);  // Daly's expansion is third order in √(δ/2M)
    EXPECT_LT(std::fabs(daly - brute), std::fabs(young - brute));
  }
  EXPECT_EQ(th::daly_interval(3000, 1000), 1000);  // δ ≥ 2M: τ = M (eq. 37)
}

TEST(Goodput, GoodputAndLostWorkMatchTheirDefinitions) {
  const double delta = 60, restart = 600, mtbf = 3 * 3600, tau = th::daly_interval(delta, mtbf);
  const double expect = 1 / wall_per_work(tau, delta, restart, mtbf);
  EXPECT_NEAR(th::goodput(tau, delta, restart, mtbf), expect, 1e-12);
  // E[t | t < L] = ∫₀ᴸ t·e^{−t/M}/M dt / (1 − e^{−L/M}), by the midpoint rule
  const double segment = tau + delta;
  const int n = 200000;
  double integral = 0;
  for (int i = 0; i < n; ++i) {
    const double t = (i + 0.5) * segment / n;
    integral += t * std::exp(-t / mtbf) / mtbf * (segment / n);
  }
  const double lost = integral / (1 - std::exp(-segment / mtbf)) + restart;
  std::printf("lost per failure %.4f s, integrated %.4f s\n", th::lost_per_failure(tau, delta, restart, mtbf), lost);
  EXPECT_NEAR(th::lost_per_failure(tau, delta, restart, mtbf), lost, 1e-6 * lost);
}

TEST(Goodput, ClusterMtbfOfLlama3) {
  // Llama 3 (Dubey et al. 2024, §3.3.4): 419 unexpected interruptions in 54 days on 16,384 GPUs.
  const double cluster_hours = 54.0 * 24 / 419, gpu_hours = cluster_hours * 16384;
  const th::Goodput g = th::plan_goodput(gpu_hours, 16384, 5.67e12, 2e12, 600);
  EXPECT_NEAR(g.mtbf_s, cluster_hours * 3600, 1e-6);
  EXPECT_NEAR(g.failures_per_day, 419.0 / 54, 1e-9);
  EXPECT_NEAR(g.write_s, 2.835, 1e-9);
  EXPECT_GT(g.goodput, 0);
  EXPECT_LT(g.goodput, 1);
}

TEST(Goodput, RefusesWhatHasNoMeaning) {
  EXPECT_THROW(th::plan_goodput(0, 8, 1e9, 1e9, 0), dtl::UsageError);
  EXPECT_THROW(th::plan_goodput(100, 0, 1e9, 1e9, 0), dtl::UsageError);
  EXPECT_THROW(th::plan_goodput(100, 8, 1e9, 0, 0), dtl::UsageError);
  EXPECT_THROW(th::plan_goodput(100, 8, 0, 1e9, 0), dtl::UsageError);
  EXPECT_THROW(th::plan_goodput(100, 8, 1e9, 1e9, -1), dtl::UsageError);
}
