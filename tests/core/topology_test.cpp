// The dp × tp × pp grid: index math and the groups it builds.
#include "core/comm/topology.h"

#include <gtest/gtest.h>

#include <map>

#include "core/error.h"
#include "core/trace/trace.h"
#include "tests/test_util.h"

using namespace dtl;

TEST(Grid, MegatronOrderTensorParallelFastest) {
  const GridShape s{2, 2, 2};
  const GridCoord c = grid_coord(s, 5);  // 5 = pp 1 · 4 + dp 0 · 2 + tp 1
  EXPECT_EQ(c.pp, 1);
  EXPECT_EQ(c.dp, 0);
  EXPECT_EQ(c.tp, 1);
  for (int r = 0; r < 8; ++r) EXPECT_EQ(grid_rank(s, grid_coord(s, r)), r);
}

TEST(TopologyGroups, EachGroupHoldsTheRightRanks) {
  test::run_ranks(8, [](Comm& c) {
    Topology topo(c, {2, 2, 2});
    EXPECT_EQ(topo.dp_group().size(), 2);
    EXPECT_EQ(topo.tp_group().size(), 2);
    EXPECT_EQ(topo.pp_group().size(), 2);
    // Sum of global ranks in my TP group = the two ranks that differ only in tp.
    double v = c.rank();
    topo.tp_group().all_reduce(&v, &v, 1, DType::f64, ReduceOp::sum);
    const int base = c.rank() - topo.coord().tp;
    EXPECT_EQ(v, base + base + 1);
    if (c.rank() == 5) {
      EXPECT_EQ(topo.describe(), "DP(2)-PP(2)-TP(2) rank 5 (dp 0, pp 1, tp 1)");
      EXPECT_EQ(topo.prev_stage_world_rank(), 1);
      EXPECT_EQ(topo.next_stage_world_rank(), -1);
      EXPECT_EQ(topo.prev_stage_group_rank(), 0);
      EXPECT_EQ(topo.next_stage_group_rank(), -1);
    }
    if (c.rank() == 3) {  // (pp 0, dp 1, tp 1): its next stage is world rank 7, stage 1 of its pp group
      EXPECT_EQ(topo.next_stage_world_rank(), 7);
      EXPECT_EQ(topo.next_stage_group_rank(), 1);
      EXPECT_EQ(topo.prev_stage_world_rank(), -1);
    }
    // The group rank names the same process as the world rank: send it my world rank.
    if (!topo.is_last_stage()) {
      int me = c.rank();
      topo.pp_group().send(&me, sizeof me, topo.next_stage_group_rank(), 7);
    } else {
      int from = -1;
      topo.pp_group().recv(&from, sizeof from, topo.prev_stage_group_rank(), 7);
      EXPECT_EQ(from, topo.prev_stage_world_rank());
    }
  });
}

TEST(TopologyGroups, WrongWorldSizeIsAUsageError) {
  ThreadsOptions opt;
  opt.world_size = 6;
  const RunResult r = run_threads(opt, [](Comm& c) { Topology t(c, {2, 2, 2}); });
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find("needs 8 ranks"), std::string::npos) << r.error;
}

// Events carry their group: a sub-communicator's events name its axis and the rank within
// it (so timelines can group lanes by axis); the world's keep axis none and rank -1.
TEST(TopologyGroups, EventsCarryTheirGroupAxisAndRank) {
  const GridShape shape{2, 2, 1};
  Trace trace(4);
  test::run_ranks(
      4,
      [](Comm& c) {
        Topology topo(c, {2, 2, 1});
        double v = 1;
        topo.dp_group().all_reduce(&v, &v, 1, DType::f64, ReduceOp::sum);
        topo.tp_group().all_reduce(&v, &v, 1, DType::f64, ReduceOp::sum);
        int token = c.rank();
        if (topo.coord().tp == 0)
          topo.tp_group().send(&token, sizeof token, 1, 3);
        else
          topo.tp_group().recv(&token, sizeof token, 0, 3);
      },
      &trace);
  std::map<GroupAxis, int> collectives, transfers;
  for (const Event& e : trace.snapshot()) {
    if (e.kind != EventKind::collective && e.kind != EventKind::send && e.kind != EventKind::recv) continue;
    (e.kind == EventKind::collective ? collectives : transfers)[e.axis]++;
    const GridCoord at = grid_coord(shape, e.rank);
    switch (e.axis) {
      case GroupAxis::none: EXPECT_EQ(e.group_rank, -1) << "rank " << e.rank; break;  // the splits' all-gathers
      case GroupAxis::dp: EXPECT_EQ(e.group_rank, at.dp) << "rank " << e.rank; break;
      case GroupAxis::tp: EXPECT_EQ(e.group_rank, at.tp) << "rank " << e.rank; break;
      case GroupAxis::pp: EXPECT_EQ(e.group_rank, at.pp) << "rank " << e.rank; break;
    }
  }
  EXPECT_EQ(collectives[GroupAxis::dp], 4);  // one all-reduce per rank on each axis
  EXPECT_EQ(collectives[GroupAxis::tp], 4);
  EXPECT_EQ(collectives[GroupAxis::none], 3 * 4);  // Topology's three splits
  EXPECT_EQ(transfers[GroupAxis::tp], 4);          // two sends, two receives
}
