// The pipeline view's colour by role (viz/views/pipeline): a B whose own stage runs the W of its
// micro-batch and chunk is an input-gradient-only I, any other B a full backward, on blocks
// worked by hand; and the four roles' fills differ from each other for every micro-batch's hue,
// so an I never reads as a full B or a W.
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
