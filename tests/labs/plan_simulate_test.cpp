// One performance model (issue 45): `dtlab plan`'s step time is `dtlab simulate`'s for the same
// layout. The planner runs the step's components through the pipeline simulation without events
// (core/theory/step_model.h); the simulator lays the same components out event by event
// (labs/simulate). Each layout below exercises another part: DP across nodes, TP in a node,
// PP across nodes, ZeRO-1/2/3, full recomputation, context parallelism, H100 with NVLS.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/theory/kernel_time.h"
#include "core/theory/plan.h"
#include "core/theory/step_model.h"
#include "labs/simulate/workload.h"

namespace th = dtl::theory;
namespace sim = dtl::sim;

namespace {

struct Layout {
  const char* model;
  const char* cluster;
  th::ParallelConfig config;
};

double simulated_step(const th::Plan& p) {
  sim::Workload w = sim::workload_from_plan(p, p.config.schedule, sim::CommAlgo::nccl);
  w.chunks = p.config.chunks;
  return sim::simulate_step(w).step_s;
}

}  // namespace

TEST(PlanSimulate, SameStepTimeForTheSameLayout) {
  const Layout layouts[] = {
      {"175b", "a100-80gb", {8, 8, 4, 1, 1, 32, th::Recompute::selective}},
      {"175b", "a100-80gb", {8, 8, 4, 2, 1, 32, th::Recompute::full}},
      {"70b", "h100-80gb", {4, 8, 2, 3, 1, 8, th::Recompute::none}},
      {"7b", "h200", {16, 2, 1, 0, 2, 4, th::Recompute::selective}},
      {"13b", "a100-80gb", {2, 4, 5, 0, 1, 10, th::Recompute::full}},
  };
  double worst = 0;
  for (const Layout& l : layouts) {
    th::ClusterSpec c = th::cluster_preset(l.cluster);
    const th::ParallelConfig& p = l.config;
    c.gpus = p.dp * p.tp * p.pp * p.cp;
    const th::Plan pl = th::plan(th::model_preset(l.model), c, p);
    const double planned = pl.time.total(), simulated = simulated_step(pl);
    const double difference = std::abs(planned / simulated - 1);
    std::printf("%-5s %-10s dp %d tp %d pp %d ZeRO-%d: plan %.6f s, simulate %.6f s\n", l.model, l.cluster, p.dp, p.tp,
                p.pp, p.zero, planned, simulated);
    worst = std::max(worst, difference);
    EXPECT_LT(difference, 1e-9) << l.model << " on " << l.cluster << ": plan " << planned << " s, simulate "
                                << simulated;
  }
  std::printf("largest relative difference %.3g\n", worst);
}

// What real runs do (core/theory/practice.h) and the other model families go through both as well.
TEST(PlanSimulate, PracticesFamiliesAndExpertsMatchToo) {
  struct Case {
    const char* model;
    th::Framework framework;
    th::ParallelConfig config;
  };
  const Case cases[] = {
      {"gpt3-175b", th::Framework::megatron_2021, {8, 8, 4, 1, 1, 32, th::Recompute::full}},
      {"llama3-8b", th::Framework::fsdp, {16, 1, 1, 3, 2, 1, th::Recompute::none}},
      {"llama3-70b", th::Framework::megatron_core, {4, 8, 2, 1, 1, 8, th::Recompute::selective}},
      {"mixtral-8x7b",
       th::Framework::megatron_core,
       {8, 2, 2, 1, 1, 8, th::Recompute::full, th::ZeroConvention::sixteen, 0.5, 8}},
  };
  double worst = 0;
  for (const Case& k : cases) {
    th::ClusterSpec c = th::cluster_preset("h100-80gb");
    th::ParallelConfig p = k.config;
    p.practice = th::framework_practice(k.framework);
    if (std::string(k.model) == "llama3-70b") p.practice.tp_comm = th::CommOverlap::overlapped;
    if (std::string(k.model) == "llama3-8b") p.practice.zero3_prefetch = 0;
    c.gpus = p.dp * p.tp * p.pp * p.cp;
    const th::Plan pl = th::plan(th::model_preset(k.model), c, p);
    const double planned = pl.time.total(), simulated = simulated_step(pl);
    std::printf("%-12s %-13s: plan %.6f s, simulate %.6f s\n", k.model, th::framework_name(k.framework), planned,
                simulated);
    worst = std::max(worst, std::abs(planned / simulated - 1));
    EXPECT_NEAR(planned / simulated, 1.0, 1e-9) << k.model;
    // --explain's rows add up to the same step (step_model.h's explain_step)
    EXPECT_NEAR(th::explain_step(pl).total() / planned, 1.0, 1e-9) << k.model << ": the breakdown misses time";
  }
  std::printf("largest relative difference %.3g\n", worst);
}

TEST(PlanSimulate, ContextParallelStepMatchesToo) {
  th::ModelSpec m{"long", 0, 32, 4096, 32, 131072, 32000};
  th::ClusterSpec c = th::cluster_preset("h100-80gb");
  th::ParallelConfig p{4, 4, 1, 1, 1, 8, th::Recompute::selective};
  p.cp = 4;
  c.gpus = 64;
  const th::Plan pl = th::plan(m, c, p);
  EXPECT_NEAR(pl.time.total() / simulated_step(pl), 1.0, 1e-9);
}

TEST(PlanSimulate, NoFlatEfficiencyInThePlan) {
  // The planner's step no longer reads ParallelConfig::efficiency (simulate --compute flat still does).
  th::ClusterSpec c = th::cluster_preset("a100-80gb");
  c.gpus = 256;
  th::ParallelConfig p{8, 8, 4, 1, 1, 32, th::Recompute::selective};
  const double at_half = th::plan(th::model_preset("175b"), c, p).time.total();
  p.efficiency = 0.9;
  EXPECT_EQ(th::plan(th::model_preset("175b"), c, p).time.total(), at_half);
}

// The schedule is the plan's too (--schedule, --chunks): GPipe and Megatron's interleaving, with
// DP buckets beside each chunk's last backward, ZeRO-2 per chunk and ZeRO-3 per layer, equal in
// both; interleaving shortens the step as its bubble (p−1)/(v·M+p−1) says it should, and holds
// the first stage's (p−1)·2 + (v−1)·p + 1 chunks of L/(p·v) layers.
TEST(PlanSimulate, InterleavedAndGpipeSchedulesMatchToo) {
  using dtl::pipeline::ScheduleKind;
  struct Case {
    ScheduleKind schedule;
    int chunks, zero;
  };
  const Case cases[] = {{ScheduleKind::interleaved, 2, 1}, {ScheduleKind::interleaved, 3, 0},
                        {ScheduleKind::interleaved, 4, 2}, {ScheduleKind::interleaved, 2, 3},
                        {ScheduleKind::gpipe, 1, 1},       {ScheduleKind::one_f_one_b, 1, 1}};
  const th::ModelSpec m = th::model_preset("175b");  // 96 layers: pp 4 × v 2, 3, 4 divide them
  double worst = 0, one_f_one_b = 0;
  for (const Case& k : cases) {
    th::ClusterSpec c = th::cluster_preset("a100-80gb");
    th::ParallelConfig p{8, 8, 4, k.zero, 1, 32, th::Recompute::full};
    p.schedule = k.schedule, p.chunks = k.chunks;
    c.gpus = p.dp * p.tp * p.pp;
    const th::Plan pl = th::plan(m, c, p);
    const double planned = pl.time.total(), simulated = simulated_step(pl);
    std::printf("%-11s v %d ZeRO-%d: plan %.6f s, simulate %.6f s, bubble %.4f\n",
                dtl::pipeline::schedule_name(k.schedule), k.chunks, k.zero, planned, simulated, pl.bubble);
    worst = std::max(worst, std::abs(planned / simulated - 1));
    EXPECT_LT(std::abs(planned / simulated - 1), 1e-9) << dtl::pipeline::schedule_name(k.schedule) << " v " << k.chunks;
    EXPECT_DOUBLE_EQ(pl.bubble, 3.0 / (k.chunks * 32 + 3));
    if (k.schedule == ScheduleKind::one_f_one_b) one_f_one_b = planned;
    if (k.schedule == ScheduleKind::interleaved && k.zero == 1) {  // ZeRO-1 v 2 against 1F1B's ZeRO-1, below
      th::ParallelConfig q = p;
      q.schedule = ScheduleKind::one_f_one_b, q.chunks = 1;
      EXPECT_LT(planned, th::plan(m, c, q).time.total()) << "interleaving must shorten the bubble";
      // Activations on stage 0: (4−1)·2 + (2−1)·4 + 1 = 11 chunks of 96/(4·2) = 12 layers in flight,
      // 132 layer-micro-batches against 1F1B's min(M, p) = 4 micro-batches of 24 layers, 96.
      const double per_layer = th::plan(m, c, q).memory.activations / (24.0 * 4);
      EXPECT_NEAR(pl.memory.activations, per_layer * 12 * 11, 1e-6 * pl.memory.activations);
    }
  }
  EXPECT_GT(one_f_one_b, 0);
  std::printf("largest relative difference %.3g\n", worst);
}

TEST(PlanSimulate, ScheduleOptionsThatCannotApplyAreRefused) {
  using dtl::pipeline::ScheduleKind;
  const th::ModelSpec m = th::model_preset("175b");
  th::ClusterSpec c = th::cluster_preset("a100-80gb");
  auto with = [&](int pp, int M, ScheduleKind s, int v) {
    th::ParallelConfig p{1, 8, pp, 0, 1, M};
    p.schedule = s, p.chunks = v;
    c.gpus = 8 * pp;
    return p;
  };
  EXPECT_THROW(th::plan(m, c, with(4, 32, ScheduleKind::one_f_one_b, 2)), dtl::UsageError);  // chunks need interleaving
  EXPECT_THROW(th::plan(m, c, with(4, 30, ScheduleKind::interleaved, 2)), dtl::UsageError);  // M not a multiple of pp
  EXPECT_THROW(th::plan(m, c, with(4, 32, ScheduleKind::interleaved, 5)), dtl::UsageError);  // 96 layers, pp·v 20
  EXPECT_THROW(th::plan(m, c, with(1, 32, ScheduleKind::gpipe, 1)), dtl::UsageError);        // no pipeline to order
  EXPECT_THROW(th::plan(m, c, with(4, 32, ScheduleKind::zb_h1, 2)), dtl::UsageError);        // one chunk per stage
  EXPECT_THROW(th::plan(m, c, with(4, 6, ScheduleKind::dualpipe_v, 2)), dtl::UsageError);    // M < 2·pp
  EXPECT_THROW(th::plan(m, c, with(4, 32, ScheduleKind::csv, 1)), dtl::UsageError);          // the lab's file
  th::ParallelConfig zero2 = with(4, 32, ScheduleKind::zb_h1, 1);
  zero2.zero = 2, zero2.dp = 2, c.gpus = 64;  // W after B: the gradients reduced once per step only
  EXPECT_THROW(th::plan(m, c, zero2), dtl::UsageError);
  c.gpus = 32;
  EXPECT_NO_THROW(th::plan(m, c, with(4, 32, ScheduleKind::interleaved, 4)));
  EXPECT_NO_THROW(th::plan(m, c, with(4, 32, ScheduleKind::zb_v, 2)));
}

// The zero-bubble and V schedules (issue 48) in the planner and the simulator: W is the layers'
// weight-gradient GEMMs taken out of B (kernel_time.h), the DP buckets wait for each chunk's last W.
// Both commands give the same step; ZB-H1 is shorter than 1F1B (Qi et al.: bubble (p−1)(F+B−2W)
// against (p−1)(F+B)); and each schedule's activations on stage 0 are its published bound
// (schedule_formulas.cpp) times the layers of a chunk, against 1F1B's min(M, p) stages' worth.
TEST(PlanSimulate, ZeroBubbleAndVSchedulesMatchToo) {
  using dtl::pipeline::ScheduleKind;
  struct Case {
    ScheduleKind schedule;
    int chunks, zero, in_flight;  // in_flight: stage 0's published chunks in flight at P 4, M 32
  };
  const Case cases[] = {{ScheduleKind::one_f_one_b, 1, 1, 4},     {ScheduleKind::zb_h1, 1, 1, 4},
                        {ScheduleKind::zb_h2, 1, 0, 7},           {ScheduleKind::zb_v, 2, 1, 8},
                        {ScheduleKind::interleaved_zb, 2, 1, 11}, {ScheduleKind::dualpipe_v, 2, 0, 9}};
  const th::ModelSpec m = th::model_preset("175b");  // 96 layers over pp 4: 24 per stage, 12 per chunk
  double worst = 0, one_f_one_b = 0, one_f_one_b_activations = 0;
  for (const Case& k : cases) {
    th::ClusterSpec c = th::cluster_preset("a100-80gb");
    th::ParallelConfig p{8, 8, 4, k.zero, 1, 32, th::Recompute::selective};
    p.schedule = k.schedule, p.chunks = k.chunks;
    c.gpus = p.dp * p.tp * p.pp;
    const th::Plan pl = th::plan(m, c, p);
    const double planned = pl.time.total(), simulated = simulated_step(pl);
    std::printf("%-14s ZeRO-%d: plan %.6f s, simulate %.6f s, bubble %.4f (%s)\n",
                dtl::pipeline::schedule_name(k.schedule), k.zero, planned, simulated, pl.bubble, pl.bubble_formula);
    worst = std::max(worst, std::abs(planned / simulated - 1));
    EXPECT_LT(std::abs(planned / simulated - 1), 1e-9) << dtl::pipeline::schedule_name(k.schedule);
    if (k.schedule == ScheduleKind::one_f_one_b) {
      one_f_one_b = planned, one_f_one_b_activations = pl.memory.activations;
      continue;
    }
    const double layers_per_chunk = 24.0 / k.chunks, per_layer = one_f_one_b_activations / (24.0 * 4);
    EXPECT_NEAR(pl.memory.activations, per_layer * layers_per_chunk * k.in_flight, 1e-9 * pl.memory.activations)
        << dtl::pipeline::schedule_name(k.schedule);
    if (k.schedule == ScheduleKind::zb_h1) { EXPECT_LT(planned, one_f_one_b) << "ZB-H1 must shorten 1F1B's bubble"; }
  }
  std::printf("largest relative difference %.3g\n", worst);
}

// W is the weight-gradient half of the linear layers' backward GEMMs: as many FLOPs as the input
// gradients', so between a third and two thirds of their time on any shape the kernels model.
TEST(PlanSimulate, WeightGradientsAreAboutHalfTheLinearBackward) {
  for (const char* model : {"7b", "175b", "llama3-8b"}) {
    th::ParallelConfig p{1, 8, 1, 0, 1, 1};
    const th::LayerTime l = th::transformer_layer_time(th::cluster_preset("h100-80gb"), th::model_preset(model), p);
    const double share = l.weight_gradient_s / l.linear_backward_s;
    std::printf("%-10s W %.3f ms of the linear backward's %.3f ms (%.3f)\n", model, 1e3 * l.weight_gradient_s,
                1e3 * l.linear_backward_s, share);
    EXPECT_GT(share, 1.0 / 3) << model;
    EXPECT_LT(share, 2.0 / 3) << model;
  }
}

// Uneven end stages (Megatron-LM's --decoder-first/last-pipeline-num-layers; Llama 3 405B ran 126
// layers on 16 stages, one layer off each end, Dubey et al. 2024 §3.3.2): the counts per stage, the
// same step in both commands, and the activations of the busiest stage by hand — 1F1B keeps
// min(M, p − s) micro-batches on stage s, so 7 layers × 16 on stage 0 lose to 8 × 15 on stage 1.
TEST(PlanSimulate, UnevenEndStagesMatchAndHoldTheirOwnLayers) {
  const th::ModelSpec m = th::model_preset("llama3-405b");
  th::ClusterSpec c = th::cluster_preset("h100-80gb");
  th::ParallelConfig even{2, 8, 16, 1, 1, 16, th::Recompute::none};
  c.gpus = 2 * 8 * 16;
  th::ParallelConfig uneven = even;
  uneven.first_stage_layers = 7, uneven.last_stage_layers = 7;
  const std::vector<int> counts = th::stage_layer_counts(m.layers, uneven);
  ASSERT_EQ(counts.size(), 16u);
  EXPECT_EQ(counts.front(), 7);
  EXPECT_EQ(counts.back(), 7);
  for (std::size_t s = 1; s + 1 < counts.size(); ++s) EXPECT_EQ(counts[s], 8) << "stage " << s;
  EXPECT_EQ(th::stage_layer_counts(m.layers, even).front(), 8);  // 126 = 14·8 + 2·7, the first 14 get 8
  EXPECT_EQ(th::stage_layer_counts(m.layers, even).back(), 7);
  EXPECT_DOUBLE_EQ(th::layers_in_flight(m.layers, even), 8.0 * 16);
  EXPECT_DOUBLE_EQ(th::layers_in_flight(m.layers, uneven), 8.0 * 15);
  const th::Plan a = th::plan(m, c, even), b = th::plan(m, c, uneven);
  EXPECT_NEAR(b.memory.activations / a.memory.activations, 120.0 / 128.0, 1e-12);
  for (const th::Plan* pl : {&a, &b}) {
    const double planned = pl->time.total(), simulated = simulated_step(*pl);
    std::printf("first stage %d layers: plan %.6f s, simulate %.6f s, activations %.3f GB\n",
                th::stage_layer_counts(m.layers, pl->config).front(), planned, simulated, pl->memory.activations / 1e9);
    EXPECT_LT(std::abs(planned / simulated - 1), 1e-9);
  }
  auto refused = [&](const th::ParallelConfig& p) {
    try {
      th::plan(m, c, p);
      ADD_FAILURE() << "planned an uneven split that cannot apply";
    } catch (const dtl::UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("stage"), std::string::npos) << e.what();
      std::printf("refused: %s\n", e.what());
    }
  };
  th::ParallelConfig too_many = uneven;
  too_many.first_stage_layers = 60, too_many.last_stage_layers = 60;  // 6 layers left for 14 stages
  refused(too_many);
  th::ParallelConfig looped = uneven;  // interleaving splits every stage evenly
  looped.schedule = dtl::pipeline::ScheduleKind::interleaved, looped.chunks = 2;
  refused(looped);
  th::ParallelConfig one_stage{256, 1, 1, 1, 1, 1, th::Recompute::none};
  one_stage.first_stage_layers = 7;
  refused(one_stage);
}
