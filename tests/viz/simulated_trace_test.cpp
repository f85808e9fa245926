// A simulated trace opens like a run's (issue 27, item 5): `dtlab simulate --trace` writes
// each traced stage-to-stage send with its receive, the planner's memory per GPU as alloc and
// free events, and (with every rank traced) the grid; dtlab-viz steps it by transfer, draws
// the pipeline of its stages (one rank per stage: dp 0, tp 0), the topology, the memory per
// rank beside the planner's line, and names lanes by global rank and (pp, dp, tp).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "labs/lab.h"
#include "tests/cli/cli_util.h"
#include "tests/viz/headless_imgui.h"
#include "viz/model/memory_model.h"
#include "viz/views/pipeline/pipeline_model.h"

using namespace dtl;

namespace {

std::string simulate(const std::string& args, const std::string& name) {
  const std::string path = ::testing::TempDir() + name + std::to_string(::getpid()) + ".json";
  const test::CliOutput o = test::run_dtlab("simulate " + args + " --trace " + path);
  EXPECT_EQ(o.code, 0) << o.err;
  return path;
}

void remove_trace(const std::string& path) {
  std::remove(path.c_str());
  std::remove((path + ".dtlt").c_str());
}

}  // namespace

TEST(SimulatedTrace, StepsDrawsItsPipelineAndMemoryAndNamesItsRanks) {
  constexpr int P = 4, M = 8;
  const std::string path =
      simulate("--model 7b --cluster a100-80gb --gpus 16 --dp 2 --tp 2 --pp 4 --micro-batches 8", "sim_");
  viz::testing::HeadlessImGui gui;
  viz::App app;
  app.Open(viz::Session::replay(path));
  const viz::TraceData& d = app.session->data();
  // The views of a run: the pipeline, the topology (every rank traced), memory, report.
  for (ViewKind v : {ViewKind::timeline, ViewKind::memory, ViewKind::report})
    EXPECT_NE(app.panel(v), nullptr) << view_kind_name(v);
  EXPECT_EQ(app.session->views().size(), 5u) << viz::view_names(app.session->views());
  // Steps: the sends between stages, received by traced ranks.
  const std::size_t steps = app.session->steps().size();
  EXPECT_GE(steps, std::size_t(2 * M * (P - 1) * 4)) << "2·M·(P−1) sends per pipeline, 4 pipelines (dp·tp)";
  gui.frame(app);
  const std::int64_t at0 = viz::Frame{*app.session, 1, 1}.cursor_time();
  const std::size_t opened = app.controls.cursor;  // a replay opens on its timed step (viz/model/opening.h)
  EXPECT_GT(opened, 0u) << "the pipeline view opens at the timed step's first backward, not before any send";
  ASSERT_LT(opened + 40, steps);
  for (int i = 0; i < 40; ++i) app.StepOne();
  gui.frame(app);
  EXPECT_EQ(app.controls.cursor, opened + 40);
  const std::int64_t at40 = viz::Frame{*app.session, 40, 1}.cursor_time();
  EXPECT_GT(at40, at0) << "step 40 is later in the run than step 0";
  // The pipeline: P stages drawn by their dp 0, tp 0 ranks; the bubble about (P−1)/(M+P−1).
  const viz::PipelineRuns runs = viz::pipeline_runs(d);
  ASSERT_EQ(runs.runs.size(), 1u);
  const viz::PipelineStep s = viz::pipeline_step(d, runs.runs[0]);
  EXPECT_EQ(s.stages, P);
  EXPECT_EQ(s.micro_batches, M);
  EXPECT_EQ(s.blocks.size(), std::size_t(2 * P * M)) << "an F and a B per stage and micro-batch";
  const double formula = double(P - 1) / (M + P - 1);
  std::printf("simulated 1F1B, P=%d, M=%d: bubble %.4f, (P-1)/(M+P-1) = %.4f\n", P, M, s.bubble, formula);
  EXPECT_NEAR(s.bubble, formula, 0.03);
  // Memory: the model state everywhere, activations falling from the first stage to the last.
  const viz::MemoryPicture mem = viz::memory_at(d, d.t_end);
  ASSERT_EQ(mem.peak.size(), std::size_t(16));
  EXPECT_GT(mem.formula, 0) << "the planner's line";
  EXPECT_GT(mem.peak[0], mem.peak[12]) << "stage 0 keeps more micro-batches in flight than stage 3 (ranks 12-15)";
  // Lanes by global rank and coordinates.
  ASSERT_EQ(app.session->index().rank_names.size(), 16u);
  EXPECT_EQ(app.session->index().rank_names[5], "rank 5 (pp 1, dp 0, tp 1)");
  remove_trace(path);
}

// A subset of a large cluster: its ranks are named by their global rank; no topology (the
// grid is not all there), the pipeline still drawn from the traced stages.
TEST(SimulatedTrace, ASubsetNamesItsGlobalRanks) {
  const std::string path = simulate("--model 7b --cluster a100-80gb --gpus 1024 --dp 64 --tp 4 --pp 4", "sim_subset_");
  viz::testing::HeadlessImGui gui;
  viz::App app;
  app.Open(viz::Session::replay(path));
  EXPECT_EQ(app.session->views().size(), 4u) << viz::view_names(app.session->views());
  const std::vector<std::string>& names = app.session->index().rank_names;
  ASSERT_GE(names.size(), 4u);
  EXPECT_EQ(names[1], "rank 256 (pp 1, dp 0, tp 0)") << "trace rank 1 is stage 1's first rank";
  const viz::PipelineRuns runs = viz::pipeline_runs(app.session->data());
  ASSERT_EQ(runs.runs.size(), 1u);
  EXPECT_EQ(viz::pipeline_step(app.session->data(), runs.runs[0]).stages, 4);
  remove_trace(path);
}
