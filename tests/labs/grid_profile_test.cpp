// Reading a grid run's events for the calibration (labs/simulate/grid_profile.h) against a
// hand-made trace of 2 tp ranks whose figures are known: the block compute without the tp
// all-reduce inside it, the slower rank of the group setting the pace, the batch and AdamW
// gaps as host work, and rank 0's step split.
#include "labs/simulate/grid_profile.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "core/error.h"

using namespace dtl;

namespace {

constexpr std::int64_t kUs = 1000;  // ns

// The label table's roles (what the profile reads; a label's words are not).
enum Label : std::uint16_t { kNone, kBarrier, kAllReduce, kFwd, kBwd };
const std::vector<Role> kLabels = {{},
                                   library_collective_role(CollectiveKind::barrier),
                                   library_collective_role(CollectiveKind::all_reduce),
                                   Role{.pass = Pass::forward, .block = 0},
                                   Role{.pass = Pass::backward, .block = 0}};

Event span(int rank, EventKind kind, Label label, std::int64_t begin_us, std::int64_t end_us,
           GroupAxis axis = GroupAxis::none, std::uint64_t bytes = 0) {
  Event e;
  e.rank = rank, e.kind = kind, e.label = label, e.axis = axis, e.bytes = bytes;
  e.stream = kind == EventKind::collective ? kStreamComm : kStreamMain;
  e.begin_ns = begin_us * kUs, e.end_ns = end_us * kUs;
  return e;
}

// One step from `t` (µs) on `rank`: the batch 100 µs, a forward block of `fwd` µs compute and
// a 200 µs tp all-reduce inside it, a backward block of 2·fwd + the same, the gradients'
// all-reduce (dp group of 1, 1000 µs), AdamW `adamw` µs, the loss's world all-reduce 50 µs.
void step(std::vector<Event>& ev, int rank, std::int64_t t, std::int64_t fwd, std::int64_t adamw) {
  std::int64_t at = t + 100;
  ev.push_back(span(rank, EventKind::compute, kFwd, at, at + fwd + 200));
  ev.push_back(span(rank, EventKind::collective, kAllReduce, at + fwd, at + fwd + 200, GroupAxis::tp, 16384));
  at += fwd + 200;
  ev.push_back(span(rank, EventKind::compute, kBwd, at, at + 2 * fwd + 200));
  ev.push_back(span(rank, EventKind::collective, kAllReduce, at + 2 * fwd, at + 2 * fwd + 200, GroupAxis::tp, 16384));
  at += 2 * fwd + 200;
  ev.push_back(span(rank, EventKind::collective, kAllReduce, at, at + 1000, GroupAxis::dp, 1 << 20));
  at += 1000 + adamw;
  ev.push_back(span(rank, EventKind::collective, kAllReduce, at, at + 50, GroupAxis::none, 8));
}

}  // namespace

TEST(GridProfile, BlockComputeHostWorkAndStepSplitFromTheEvents) {
  // 4 steps, 10 ms apart; barriers of 10 µs open each. Rank 1 computes slower (400 vs 300 µs
  // forward) and its AdamW is longer (300 vs 250 µs).
  std::vector<Event> ev;
  for (int s = 0; s < 4; ++s)
    for (int rank = 0; rank < 2; ++rank) {
      const std::int64_t t = 10000 * s;
      ev.push_back(span(rank, EventKind::collective, kBarrier, t, t + 10));
      step(ev, rank, t + 10, rank == 0 ? 300 : 400, rank == 0 ? 250 : 300);
    }
  const sim::GridProfile p = sim::profile_grid_events(ev, kLabels, sim::GridShapeSpec{1, 2, 1, 1, 64, 16, 8, 1});
  EXPECT_EQ(p.steps_read, 2);  // steps 1 and 2: the first warms up, the last has no barrier after it
  ASSERT_EQ(p.block_forward_s.size(), 1u);
  std::printf(
      "block forward %.0f µs, backward %.0f µs, host %.0f µs; rank 0: compute %.0f tp %.0f dp %.0f rest %.0f µs\n",
      p.block_forward_s[0] * 1e6, p.block_backward_s[0] * 1e6, p.host_s[0] * 1e6, p.rank0.compute * 1e6,
      p.rank0.tp * 1e6, p.rank0.dp * 1e6, p.rank0.rest * 1e6);
  EXPECT_NEAR(p.block_forward_s[0], 400e-6, 1e-12);  // the slower tp rank, without the all-reduce inside
  EXPECT_NEAR(p.block_backward_s[0], 800e-6, 1e-12);
  EXPECT_NEAR(p.host_s[0], 100e-6 + 300e-6, 1e-12);  // rank 0's batch + the stage's slowest AdamW
  EXPECT_NEAR(p.rank0.compute, 900e-6, 1e-12);
  EXPECT_NEAR(p.rank0.tp, 400e-6, 1e-12);
  EXPECT_NEAR(p.rank0.dp, 1050e-6, 1e-12);  // the gradients and the loss
  // The window runs from the barrier's end to the next barrier: 10 ms less 10 µs.
  EXPECT_NEAR(p.rank0.rest, 9990e-6 - 900e-6 - 400e-6 - 1050e-6, 1e-12);
}

TEST(GridProfile, TooFewStepsIsAnErrorSayingSo) {
  std::vector<Event> ev;
  for (int s = 0; s < 2; ++s) {
    ev.push_back(span(0, EventKind::collective, kBarrier, 10000 * s, 10000 * s + 10));
    step(ev, 0, 10000 * s + 10, 300, 250);
  }
  try {
    sim::profile_grid_events(ev, kLabels, sim::GridShapeSpec{1, 1, 1, 1, 64, 16, 8, 1});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find("at least 3 steps"), std::string::npos) << e.what(); }
}
