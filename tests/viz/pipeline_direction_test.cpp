// Where the pipeline view's direction marks point (viz/views/pipeline/pipeline_model.h's
// block_direction), against placements worked by hand: the V of zb-v over 4 stages (chunk 0
// runs stages 0→3, chunk 1 runs 3→0, so virtual stage 3 → 4 stays on stage 3), the loop of
// interleaving (stage 3's chunk 0 sends to stage 0's chunk 1), and the one-chunk ends.
#include <gtest/gtest.h>

#include <cstdio>

#include "viz/views/pipeline/pipeline_model.h"

using dtl::Pass;
using dtl::viz::block_direction;
using dtl::viz::PipeBlock;

namespace {

PipeBlock block(int stage, Pass op, int chunk) { return {stage, op, 0, chunk, 0, 0}; }

}  // namespace

TEST(PipelineDirection, TheVOfZbVAndDualPipeV) {
  struct Case {
    int stage;
    Pass op;
    int chunk, direction;
  };
  // Stage s holds virtual stages s (chunk 0) and 7 − s (chunk 1).
  const Case cases[] = {
      {0, Pass::forward, 0, +1},  {1, Pass::forward, 0, +1},  {3, Pass::forward, 0, 0},   // vs 3 → 4: stage 3 again
      {3, Pass::forward, 1, -1},  {1, Pass::forward, 1, -1},  {0, Pass::forward, 1, 0},   // vs 7: the loss
      {0, Pass::backward, 0, 0},  {2, Pass::backward, 0, -1}, {3, Pass::backward, 1, 0},  // vs 4 → 3: stage 3
      {1, Pass::backward, 1, +1}, {0, Pass::backward, 1, +1}, {2, Pass::weight, 1, 0},    // W sends nothing
  };
  for (const char* schedule : {"zb-v", "dualpipev"})
    for (const Case& c : cases) {
      const int got = block_direction(block(c.stage, c.op, c.chunk), schedule, 4, 2);
      EXPECT_EQ(got, c.direction) << schedule << ": stage " << c.stage << " " << dtl::pass_letter(c.op) << " chunk "
                                  << c.chunk;
    }
}

TEST(PipelineDirection, TheLoopOfInterleavingAndOneChunk) {
  // interleaved, 4 stages, 2 chunks: virtual stage c·4 + s.
  EXPECT_EQ(block_direction(block(3, Pass::forward, 0), "interleaved", 4, 2), -1);   // vs 3 → 4 on stage 0
  EXPECT_EQ(block_direction(block(3, Pass::forward, 1), "interleaved", 4, 2), 0);    // vs 7: the last
  EXPECT_EQ(block_direction(block(0, Pass::backward, 1), "interleaved", 4, 2), +1);  // vs 4 → 3 on stage 3
  EXPECT_EQ(block_direction(block(1, Pass::forward, 0), "1f1b", 4, 1), +1);
  EXPECT_EQ(block_direction(block(1, Pass::backward, 0), "1f1b", 4, 1), -1);
  EXPECT_EQ(block_direction(block(0, Pass::backward, 0), "1f1b", 4, 1), 0);
  EXPECT_EQ(block_direction(block(0, Pass::forward, 5), "1f1b", 4, 1), 0);  // a chunk the schedule has not
}
