// The pipeline view's colour by role (viz/views/pipeline): a B whose own stage runs the W of its
// micro-batch and chunk is an input-gradient-only I, any other B a full backward, on blocks
// worked by hand; and the four roles' fills differ from each other for every micro-batch's hue,
// so an I never reads as a full B or a W; a step whose stages split only some backwards
// (DualPipeV's cool-down) is complete.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <iterator>

#include "viz/views/pipeline/pipeline_draw.h"
#include "viz/views/pipeline/pipeline_model.h"

using dtl::Pass;
using dtl::viz::BlockRole;
using dtl::viz::PipeBlock;

namespace {

PipeBlock block(int stage, Pass op, int m, int chunk = 0) { return {stage, op, m, chunk, 0, 0}; }

// The largest channel difference of two colours (0..255).
int distance(ImU32 a, ImU32 b) {
  int most = 0;
  for (int shift : {IM_COL32_R_SHIFT, IM_COL32_G_SHIFT, IM_COL32_B_SHIFT})
    most = std::max(most, std::abs(int((a >> shift) & 0xff) - int((b >> shift) & 0xff)));
  return most;
}

}  // namespace

TEST(PipelineRoles, ABackwardIsAnIWhereItsOwnStageRunsItsW) {
  const std::vector<PipeBlock> blocks = {
      block(0, Pass::forward, 0),     block(0, Pass::backward, 0),   // W0 below on stage 0: I
      block(0, Pass::backward, 1),                                   // no W1 anywhere: full B
      block(0, Pass::weight, 0),      block(1, Pass::backward, 0),   // W0 is stage 0's: full B here
      block(1, Pass::backward, 2, 1), block(1, Pass::weight, 2, 0),  // W of chunk 0, B of chunk 1: full B
      block(1, Pass::backward, 3, 1), block(1, Pass::weight, 3, 1),  // same chunk: I
  };
  const std::vector<BlockRole> want = {BlockRole::forward,     BlockRole::input_grad, BlockRole::backward,
                                       BlockRole::weight_grad, BlockRole::backward,   BlockRole::backward,
                                       BlockRole::weight_grad, BlockRole::input_grad, BlockRole::weight_grad};
  EXPECT_TRUE(dtl::viz::has_weight_blocks(blocks));  // the legend then shows I and W
  EXPECT_FALSE(dtl::viz::has_weight_blocks({block(0, Pass::forward, 0), block(0, Pass::backward, 0)}));
  const std::vector<BlockRole> got = dtl::viz::block_roles(blocks);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(int(got[i]), int(want[i])) << "block #" << i << " (stage " << blocks[i].stage << ", micro-batch "
                                         << blocks[i].micro_batch << ", chunk " << blocks[i].chunk << ")";
}

TEST(PipelineRoles, EachRoleHasItsOwnColourForEveryMicroBatch) {
  using dtl::viz::pipeline_ui::block_fill;
  const BlockRole roles[] = {BlockRole::forward, BlockRole::backward, BlockRole::input_grad, BlockRole::weight_grad};
  int closest = 255;
  for (int m = 0; m < int(std::size(dtl::viz::pipeline_ui::kHues)); ++m)
    for (std::size_t a = 0; a < std::size(roles); ++a)
      for (std::size_t b = a + 1; b < std::size(roles); ++b) {
        const int d = distance(block_fill(m, roles[a]), block_fill(m, roles[b]));
        closest = std::min(closest, d);
        EXPECT_GE(d, 40) << "micro-batch " << m << ": " << dtl::viz::role_name(roles[a]) << " and "
                         << dtl::viz::role_name(roles[b]) << " differ by " << d << " in a channel";
      }
  std::printf("closest two roles of one micro-batch: %d apart in a channel (of 255)\n", closest);
  // The I keeps its micro-batch's hue: two micro-batches' I's still differ.
  for (int m = 1; m < int(std::size(dtl::viz::pipeline_ui::kHues)); ++m)
    EXPECT_GE(distance(block_fill(m, BlockRole::input_grad), block_fill(m - 1, BlockRole::input_grad)), 15)
        << "micro-batches " << m - 1 << " and " << m << " as I";
}

// DualPipeV splits only its cool-down's later half: a stage runs fewer W than B, and its step is
// still complete (the view once showed every dualpipev step "incomplete").
TEST(PipelineRoles, AStepWithSomeBackwardsSplitIsComplete) {
  dtl::viz::TraceData d;
  d.ranks = 2;
  d.labels = {"", "dualpipev", "F", "B", "W"};
  d.roles = {{},
             dtl::Role{.part = dtl::RunPart::timed, .schedule = dtl::ScheduleKind::dualpipe_v},
             dtl::Role{.pass = Pass::forward},
             dtl::Role{.pass = Pass::backward},
             dtl::Role{.pass = Pass::weight}};
  const auto ev = [&](int rank, std::uint16_t label, int m, std::int64_t b, dtl::EventKind kind) {
    dtl::Event e;
    e.kind = kind, e.rank = rank, e.begin_ns = b, e.end_ns = b + 100, e.label = label;
    e.micro_batch = std::int16_t(m), e.step = 0;
    d.events.push_back(e);
  };
  for (int r = 0; r < 2; ++r) ev(r, 1, 0, 0, dtl::EventKind::phase), d.events.back().end_ns = 2000;
  // Stage 0: F0 F1 B0 B1 W1 (only micro-batch 1's backward split); stage 1: F0 F1 B0 B1.
  for (int r = 0; r < 2; ++r)
    for (int m = 0; m < 2; ++m) ev(r, 2, m, 100 * (m + r), dtl::EventKind::compute);
  for (int r = 0; r < 2; ++r)
    for (int m = 0; m < 2; ++m) ev(r, 3, m, 400 + 100 * (m + 1 - r), dtl::EventKind::compute);
  ev(0, 4, 1, 800, dtl::EventKind::compute);
  d.t_begin = 0, d.t_end = 2000;
  const dtl::viz::PipelineRuns runs = dtl::viz::pipeline_runs(d);
  ASSERT_EQ(runs.runs.size(), 1u);
  ASSERT_EQ(runs.runs[0].steps.size(), 1u);
  EXPECT_TRUE(runs.runs[0].steps[0].complete) << "1 W beside 2 B's on stage 0";
  EXPECT_EQ(runs.runs[0].last_complete, 0);
}
