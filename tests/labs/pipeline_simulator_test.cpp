// Pipeline schedules and their simulator (core/theory/schedule.h) over many (P, M, v):
// every action once and in order, dependencies kept under uniform and random times, the
// activations in flight, and the curriculum's bubble numbers (seeds 001–003) measured by
// the simulator with F = 1, B = 2, p2p = 0. Gold tables: pipeline_schedule_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "core/theory/schedule.h"

namespace dtl::pipeline {
namespace {

// ---- properties over many (P, M, v) --------------------------------------------------

struct Case {
  ScheduleKind kind;
  ScheduleConfig config;
};

std::string name_of(const Case& c) {
  return std::string(schedule_name(c.kind)) + " P=" + std::to_string(c.config.stages) +
         " M=" + std::to_string(c.config.micro_batches) + " v=" + std::to_string(c.config.chunks);
}

// Every valid configuration with P 1..8, M 1..32 (v 2..3 for interleaved).
std::vector<Case> all_valid_cases() {
  std::vector<Case> cases;
  for (int P = 1; P <= 8; ++P)
    for (int M = 1; M <= 32; ++M) {
      for (ScheduleKind k : {ScheduleKind::gpipe, ScheduleKind::one_f_one_b, ScheduleKind::zb_h1})
        if (k == ScheduleKind::gpipe || M >= P) cases.push_back({k, {P, M, 1}});
      for (int v = 2; v <= 3; ++v)
        if (P >= 2 && M % P == 0) cases.push_back({ScheduleKind::interleaved, {P, M, v}});
    }
  return cases;
}

TEST(PipelineSchedule, EveryActionOncePerStageInOrderFThenBThenW) {
  for (const Case& c : all_valid_cases()) {
    const Schedule s = make_schedule(c.kind, c.config);
    const bool zb = c.kind == ScheduleKind::zb_h1;
    for (int st = 0; st < c.config.stages; ++st) {
      std::map<std::tuple<int, int, int>, int> position;  // (op, m, chunk) → index
      const auto& list = s.stages[st];
      for (int i = 0; i < int(list.size()); ++i) {
        const Action& a = list[i];
        const bool fresh = position.emplace(std::tuple{int(a.op), a.micro_batch, a.chunk}, i).second;
        ASSERT_TRUE(fresh) << name_of(c) << " stage " << st << ": " << pass_letter(a.op) << a.micro_batch << "."
                           << a.chunk << " twice";
      }
      const size_t per_op = size_t(c.config.micro_batches) * c.config.chunks;
      ASSERT_EQ(list.size(), per_op * (zb ? 3 : 2)) << name_of(c) << " stage " << st;
      for (int m = 0; m < c.config.micro_batches; ++m)
        for (int ch = 0; ch < c.config.chunks; ++ch) {
          const int f = position.at({int(Pass::forward), m, ch}), b = position.at({int(Pass::backward), m, ch});
          EXPECT_LT(f, b) << name_of(c) << " stage " << st << " micro-batch " << m << " chunk " << ch;
          if (zb) {
            EXPECT_LT(b, position.at({int(Pass::weight), m, ch})) << name_of(c) << " stage " << st << " W" << m;
          }
        }
    }
  }
}

// Checks the timeline against the dependency rules of schedule.h.
void expect_dependencies_hold(const Case& c, const Simulation& sim, double p2p) {
  const int P = c.config.stages, V = P * c.config.chunks;
  std::map<std::tuple<int, int, int>, TimedAction> by;  // (op, m, vs)
  for (const TimedAction& t : sim.actions)
    by[{int(t.action.op), t.action.micro_batch, t.action.chunk * P + t.stage}] = t;
  ASSERT_EQ(by.size(), sim.actions.size()) << name_of(c);
  const double eps = 1e-9;
  for (const auto& [key, t] : by) {
    const auto [op, m, vs] = key;
    // Neighbouring virtual stages sit on two stages whenever P > 1 (vs − 1 of chunk c's
    // stage 0 is stage P − 1 of chunk c − 1), so their messages pay p2p.
    const double hop = P > 1 ? p2p : 0;
    if (op == int(Pass::forward) && vs > 0) {
      EXPECT_GE(t.begin + eps, by.at({int(Pass::forward), m, vs - 1}).end + hop)
          << name_of(c) << " F" << m << " vs " << vs;
    }
    if (op == int(Pass::backward)) {
      EXPECT_GE(t.begin + eps, by.at({int(Pass::forward), m, vs}).end) << name_of(c) << " B" << m << " vs " << vs;
      if (vs + 1 < V) {
        EXPECT_GE(t.begin + eps, by.at({int(Pass::backward), m, vs + 1}).end + hop)
            << name_of(c) << " B" << m << " vs " << vs;
      }
    }
    if (op == int(Pass::weight)) {
      EXPECT_GE(t.begin + eps, by.at({int(Pass::backward), m, vs}).end) << name_of(c) << " W" << m;
    }
  }
}

TEST(PipelineSimulator, CompletesAndKeepsDependenciesUniformAndRandomTimes) {
  std::mt19937 rng(20240601);
  std::uniform_real_distribution<double> u(0.1, 3.0);
  for (const Case& c : all_valid_cases()) {
    const Schedule s = make_schedule(c.kind, c.config);
    const ActionTimes uniform;
    ActionTimes random{u(rng), u(rng), -1, u(rng) / 3};
    random.weight = random.backward * std::uniform_real_distribution<double>(0.2, 0.8)(rng);
    for (const ActionTimes& t : {uniform, random}) {
      Simulation sim;
      ASSERT_NO_THROW(sim = simulate(s, t)) << name_of(c);
      ASSERT_EQ(sim.actions.size(), size_t(c.config.stages) * s.stages[0].size()) << name_of(c);
      expect_dependencies_hold(c, sim, t.p2p);
      EXPECT_GE(sim.bubble_fraction(), -1e-12) << name_of(c);
      EXPECT_LT(sim.bubble_fraction(), 1.0) << name_of(c);
    }
  }
}

// Activations a stage holds, counted until B even for zb-h1 (the input-gradient pass).
int max_in_flight_until_b(const Schedule& s, int stage) {
  int held = 0, most = 0;
  for (const Action& a : s.stages[stage]) {
    if (a.op == Pass::forward) most = std::max(most, ++held);
    if (a.op == Pass::backward) --held;
  }
  return most;
}

TEST(PipelineSchedule, InFlightBounds) {
  for (const Case& c : all_valid_cases()) {
    const Schedule s = make_schedule(c.kind, c.config);
    const int P = c.config.stages, M = c.config.micro_batches;
    for (int st = 0; st < P; ++st) {
      const int held = max_in_flight(s, st);
      switch (c.kind) {
        case ScheduleKind::gpipe: EXPECT_EQ(held, M) << name_of(c); break;
        case ScheduleKind::one_f_one_b: EXPECT_EQ(held, std::min(M, P - st)) << name_of(c) << " stage " << st; break;
        case ScheduleKind::zb_h1:
          // Until B: 1F1B's P − s. Until W: the s deferred W's add s, so every stage holds
          // P, 1F1B's peak (its stage 0), as Qi et al. §2.1 says ("same peak memory").
          EXPECT_EQ(max_in_flight_until_b(s, st), std::min(M, P - st)) << name_of(c) << " stage " << st;
          EXPECT_EQ(held, std::min(M, P)) << name_of(c) << " stage " << st;
          break;
        case ScheduleKind::interleaved:
          EXPECT_EQ(held, std::min(M * c.config.chunks, 2 * (P - st - 1) + (c.config.chunks - 1) * P + 1))
              << name_of(c) << " stage " << st;
          break;
        default: FAIL() << name_of(c) << ": all_valid_cases lists the four first schedules (the others: zoo test)";
      }
      if (c.kind != ScheduleKind::zb_h1) { EXPECT_EQ(held, forwards_before_first_backward(s, st)) << name_of(c); }
    }
  }
}

TEST(PipelineSchedule, ForwardsBeforeFirstBackward) {
  const Schedule one = make_schedule(ScheduleKind::one_f_one_b, {4, 8, 1});
  const Schedule zb = make_schedule(ScheduleKind::zb_h1, {4, 8, 1});
  const Schedule gp = make_schedule(ScheduleKind::gpipe, {4, 8, 1});
  const Schedule il = make_schedule(ScheduleKind::interleaved, {4, 8, 2});
  for (int st = 0; st < 4; ++st) {
    EXPECT_EQ(forwards_before_first_backward(one, st), 4 - st);
    EXPECT_EQ(forwards_before_first_backward(zb, st), 4 - st);
    EXPECT_EQ(forwards_before_first_backward(gp, st), 8);
    EXPECT_EQ(forwards_before_first_backward(il, st), 2 * (4 - st - 1) + 4 + 1);
  }
  // Capped at M·v: P = 4, M = 4, v = 3 → stage 0 would want 6 + 8 + 1 = 15 > 12.
  EXPECT_EQ(forwards_before_first_backward(make_schedule(ScheduleKind::interleaved, {4, 4, 3}), 0), 12);
}

TEST(PipelineSimulator, DeadlockNamesStageAndAction) {
  Schedule s = make_schedule(ScheduleKind::one_f_one_b, {2, 2, 1});
  s.stages[1] = {{Pass::backward, 0, 0}, {Pass::forward, 0, 0}, {Pass::forward, 1, 0}, {Pass::backward, 1, 0}};
  s.stages[0] = {{Pass::forward, 0, 0}, {Pass::forward, 1, 0}, {Pass::backward, 1, 0}, {Pass::backward, 0, 0}};
  try {
    simulate(s, ActionTimes{});
    FAIL() << "expected a deadlock";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("deadlocks: stage 0 waits at its action #2 B(micro-batch 1, virtual stage 0) for "
                        "B(micro-batch 1, virtual stage 1) on stage 1"),
              std::string::npos)
        << what;
  }
}

// ---- the curriculum's numbers from the simulator (F = 1, B = 2, p2p = 0) ---------------

double simulated_bubble(ScheduleKind k, int P, int M, int v = 1, ActionTimes t = {}) {
  return simulate(make_schedule(k, {P, M, v}), t).bubble_fraction();
}

TEST(PipelineBubble, GpipeAndOneFOneBMatchIdleShareExactly) {
  for (int P = 1; P <= 8; ++P)
    for (int M = 1; M <= 40; ++M) {
      const double want = bubble_idle_share(P, M);
      EXPECT_NEAR(simulated_bubble(ScheduleKind::gpipe, P, M), want, 1e-12) << "gpipe P=" << P << " M=" << M;
      if (M >= P) {
        EXPECT_NEAR(simulated_bubble(ScheduleKind::one_f_one_b, P, M), want, 1e-12) << "1f1b P=" << P << " M=" << M;
      }
    }
}

TEST(PipelineBubble, CurriculumNumbers) {
  // Seed 001: P = 4, M = 32 → 3/35 = 8.6 %.
  const double p4 = simulated_bubble(ScheduleKind::one_f_one_b, 4, 32);
  std::printf("P=4 M=32: 1f1b bubble %.4f (%.1f %%)\n", p4, 100 * p4);
  EXPECT_NEAR(p4, 3.0 / 35, 1e-12);
  EXPECT_NEAR(std::round(1000 * p4) / 10, 8.6, 1e-9);
  // Seed 002: P = 8, M = 32 → 7/39 = 17.9 % of the step, 7/32 = 21.9 % of the compute.
  const Simulation s8 = simulate(make_schedule(ScheduleKind::one_f_one_b, {8, 32, 1}), ActionTimes{});
  const double idle = s8.bubble_fraction();
  double busy = 0;
  for (double b : s8.busy) busy += b;
  const double vs_compute = (8 * s8.makespan - busy) / busy;
  std::printf("P=8 M=32: 1f1b idle share %.4f (%.1f %%), vs compute %.4f (%.1f %%)\n", idle, 100 * idle, vs_compute,
              100 * vs_compute);
  EXPECT_NEAR(idle, bubble_idle_share(8, 32), 1e-12);
  EXPECT_NEAR(vs_compute, bubble_vs_compute(8, 32), 1e-12);
  EXPECT_NEAR(std::round(1000 * idle) / 10, 17.9, 1e-9);
  EXPECT_NEAR(std::round(1000 * vs_compute) / 10, 21.9, 1e-9);
  // Seed 003: 2 stages, m = 1, 4, 8 → efficiency 50 %, 80 %, 89 %. 1F1B needs M ≥ P, so
  // M = 1 runs as GPipe (the same bubble wherever both run).
  const int ms[] = {1, 4, 8};
  const double want[] = {50, 80, 89};
  for (int i = 0; i < 3; ++i) {
    const double eff = 1 - simulated_bubble(ScheduleKind::gpipe, 2, ms[i]);
    std::printf("P=2 M=%d: efficiency %.4f (%.0f %%)\n", ms[i], eff, 100 * eff);
    EXPECT_NEAR(std::round(100 * eff), want[i], 1e-9);
    if (ms[i] >= 2) { EXPECT_NEAR(1 - simulated_bubble(ScheduleKind::one_f_one_b, 2, ms[i]), eff, 1e-12); }
  }
  // Seed 002's "K > 133 for < 5 %": 7/140 is exactly 5 %, so M = 134 is the first below.
  EXPECT_LT(bubble_idle_share(8, 134), 0.05);
  EXPECT_LE(0.05, bubble_idle_share(8, 133));
  EXPECT_NEAR(bubble_vs_compute(8, 32), 7.0 / 32, 1e-15);
  EXPECT_NEAR(bubble_idle_share(4, 8, 2), 3.0 / 19, 1e-15);
}

TEST(PipelineBubble, InterleavedShrinksTheBubble) {
  // Measured: with uniform times and p2p = 0, Megatron's interleaved order idles exactly
  // (P−1)/(v·M+P−1) of the step — the 1F1B form with M·v chunk-sized micro-batches, i.e.
  // the same P−1 fill and drain slots, each 1/v as long (Narayanan et al. 2021: the bubble
  // shrinks by v). So bubble_idle_share(P, M, v) is the simulator's fraction, not only close.
  for (int P = 2; P <= 8; ++P)
    for (int M = P; M <= 32; M += P)
      for (int v = 2; v <= 3; ++v) {
        const double il = simulated_bubble(ScheduleKind::interleaved, P, M, v);
        const double one = simulated_bubble(ScheduleKind::one_f_one_b, P, M);
        if (M == 4 * P || M == P)
          std::printf("P=%d M=%d v=%d: interleaved %.4f (formula %.4f), 1f1b %.4f\n", P, M, v, il,
                      bubble_idle_share(P, M, v), one);
        EXPECT_NEAR(il, bubble_idle_share(P, M, v), 1e-12) << "P=" << P << " M=" << M << " v=" << v;
        EXPECT_LT(il, one) << "P=" << P << " M=" << M << " v=" << v;
      }
}

TEST(PipelineBubble, ZbH1ShrinksTheBubble) {
  // With F = 1, B = 2 split into B = W = 1 (the paper's T_F = T_B = T_W), each stage idles
  // (P−1)(F + B − 2W) = P−1, a third of 1F1B's (P−1)(F + B) (Qi et al. 2023, §2.1).
  for (int P = 2; P <= 8; ++P)
    for (int M = P; M <= 32; ++M) {
      const double zb = simulated_bubble(ScheduleKind::zb_h1, P, M);  // W = B/2
      const double one = simulated_bubble(ScheduleKind::one_f_one_b, P, M);
      if (M == 8 || M == 32) std::printf("P=%d M=%d: zb-h1 %.4f  1f1b %.4f\n", P, M, zb, one);
      EXPECT_NEAR(zb, double(P - 1) / (3.0 * M + P - 1), 1e-12) << "P=" << P << " M=" << M;
      EXPECT_LT(zb, one) << "P=" << P << " M=" << M;
    }
}

}  // namespace
}  // namespace dtl::pipeline
