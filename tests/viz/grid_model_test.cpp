// The grid lab's views in plain code: the topology view's model (viz/model/grid_model.h:
// cells, groups, what a hover lights, the layout) against core's Topology index math, and
// the timeline's lanes grouped by axis and folded (viz/model/lane_groups.h) on crafted traces.
#include "viz/model/grid_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>

#include "viz/model/lane_groups.h"

using namespace dtl;
using namespace dtl::viz;

namespace {

std::string grid_meta(int dp, int tp, int pp) {
  return "{\"dp\":" + std::to_string(dp) + ",\"tp\":" + std::to_string(tp) + ",\"pp\":" + std::to_string(pp) + "}";
}

// The members of rank's group along axis by brute force: every rank sharing the other two coordinates.
std::vector<int> brute_group(const GridShape& s, int rank, GroupAxis axis) {
  const GridCoord c = grid_coord(s, rank);
  std::vector<int> out;
  for (int r = 0; r < s.size(); ++r) {
    const GridCoord o = grid_coord(s, r);
    const bool same = axis == GroupAxis::dp   ? o.tp == c.tp && o.pp == c.pp
                      : axis == GroupAxis::tp ? o.dp == c.dp && o.pp == c.pp
                                              : o.dp == c.dp && o.tp == c.tp;
    if (same) out.push_back(r);
  }
  return out;
}

Event span(int rank, EventKind kind, std::int64_t b, std::int64_t e, GroupAxis axis = GroupAxis::none,
           std::uint8_t stream = kStreamMain) {
  Event ev;
  ev.rank = rank, ev.kind = kind, ev.begin_ns = b, ev.end_ns = e, ev.axis = axis, ev.stream = stream;
  return ev;
}

TraceData crafted(int ranks, std::vector<Event> events) {
  TraceData d;
  d.ranks = ranks;
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.begin_ns != b.begin_ns ? a.begin_ns < b.begin_ns : a.rank < b.rank;
  });
  d.events = std::move(events);
  d.t_begin = d.events.empty() ? 0 : d.events.front().begin_ns;
  for (const Event& e : d.events) d.t_end = std::max(d.t_end, e.end_ns);
  return d;
}

// Per rank: a compute span on the main stream and a collective on the comm stream.
TraceData grid_trace(const GridShape& s) {
  std::vector<Event> ev;
  for (int r = 0; r < s.size(); ++r) {
    ev.push_back(span(r, EventKind::compute, 0, 100));
    ev.push_back(span(r, EventKind::collective, 100, 200, GroupAxis::dp, kStreamComm));
  }
  TraceData d = crafted(s.size(), std::move(ev));
  d.meta[kGridMeta] = grid_meta(s.dp, s.tp, s.pp);
  return d;
}

}  // namespace

TEST(GridModel, ReadsTheLabsMeta) {
  const GridModel m = parse_grid_model(grid_meta(2, 2, 2), "4");
  ASSERT_FALSE(m.empty()) << m.message;
  EXPECT_EQ(m.shape.dp, 2);
  EXPECT_EQ(m.shape.tp, 2);
  EXPECT_EQ(m.shape.pp, 2);
  EXPECT_EQ(m.ranks(), 8);
  EXPECT_EQ(m.gpus_per_node, 4);
  EXPECT_EQ(m.node_of(3), 0);
  EXPECT_EQ(m.node_of(4), 1);
  EXPECT_EQ(parse_grid_model(grid_meta(1, 2, 4)).gpus_per_node, 0);
}

TEST(GridModel, RefusesMalformedMetaWithAMessage) {
  for (const char* bad :
       {"", "[1,2]", "{\"dp\":2,\"tp\":2}", "{\"dp\":0,\"tp\":2,\"pp\":2}", "{\"dp\":2.5,\"tp\":2,\"pp\":2}",
        "{\"dp\":5000,\"tp\":1,\"pp\":1}", "{\"dp\":4096,\"tp\":4096,\"pp\":1}"}) {
    const GridModel m = parse_grid_model(bad);
    EXPECT_TRUE(m.empty()) << bad;
    EXPECT_FALSE(m.message.empty()) << bad;
  }
  TraceData d = grid_trace({2, 2, 2});
  d.meta[kGridMeta] = grid_meta(2, 2, 4);  // 16 ranks, the trace has 8
  EXPECT_NE(grid_model(d).message.find("16"), std::string::npos) << grid_model(d).message;
  EXPECT_TRUE(grid_model(crafted(4, {})).empty());  // no meta "grid"
}

TEST(GridModel, DescribesARankAsTopologyDoes) {
  EXPECT_EQ(grid_describe({2, 2, 2}, 5),
            "DP(2)-PP(2)-TP(2) rank 5 (dp 0, pp 1, tp 1)");  // core/comm/topology.h's example
  EXPECT_EQ(grid_describe({1, 2, 4}, 7), "DP(1)-PP(4)-TP(2) rank 7 (dp 0, pp 3, tp 1)");
}

TEST(GridModel, GroupsMatchTopologysSplits) {
  for (const GridShape s : {GridShape{2, 2, 2}, GridShape{1, 2, 4}, GridShape{4, 4, 4}, GridShape{3, 1, 2}}) {
    for (int r = 0; r < s.size(); ++r)
      for (GroupAxis a : {GroupAxis::dp, GroupAxis::tp, GroupAxis::pp}) {
        std::vector<int> g = grid_group(s, r, a);
        // In group-rank order: member i has coordinate i along the axis.
        for (std::size_t i = 0; i < g.size(); ++i) {
          const GridCoord c = grid_coord(s, g[i]);
          EXPECT_EQ(a == GroupAxis::dp ? c.dp : a == GroupAxis::tp ? c.tp : c.pp, int(i));
        }
        std::sort(g.begin(), g.end());
        EXPECT_EQ(g, brute_group(s, r, a)) << "rank " << r << " axis " << group_axis_name(a);
      }
  }
  EXPECT_EQ(grid_group({2, 2, 2}, 5, GroupAxis::none), std::vector<int>{5});
}

TEST(GridModel, HoverLightsTheThreeGroups) {
  const std::vector<std::uint8_t> bits = grid_highlight({2, 2, 2}, 5);  // pp 1, dp 0, tp 1
  const std::vector<std::uint8_t> want = {0, kInPp, 0, 0, kInTp, kInDp | kInTp | kInPp, 0, kInDp};
  EXPECT_EQ(bits, want);
  for (int out : {-1, 8}) {
    const auto none = grid_highlight({2, 2, 2}, out);
    EXPECT_EQ(std::count(none.begin(), none.end(), 0), 8) << out;
  }
}

TEST(GridLayout, StagesAreColumnsReplicasStackedCellsApart) {
  for (const GridShape s : {GridShape{2, 2, 2}, GridShape{1, 2, 4}, GridShape{8, 8, 8}}) {
    const Rect area{10, 20, 1400, 700};
    const GridLayout g = layout_grid(s, area, 20, 12, 6);
    ASSERT_EQ(g.cells.size(), std::size_t(s.size()));
    EXPECT_GE(g.cell, 20.0f) << s.size() << " ranks: cells too small to read a rank number";
    for (int r = 0; r < s.size(); ++r) {
      const Rect& c = g.cells[std::size_t(r)];
      const GridCoord k = grid_coord(s, r);
      const Rect& box = g.replicas[std::size_t(k.pp * s.dp + k.dp)];
      const Rect& col = g.stages[std::size_t(k.pp)];
      EXPECT_TRUE(c.x >= box.x && c.x + c.w <= box.x + box.w && c.y >= box.y && c.y + c.h <= box.y + box.h)
          << "rank " << r;
      EXPECT_TRUE(box.x >= col.x && box.x + box.w <= col.x + col.w + 0.01f) << "rank " << r;
      EXPECT_TRUE(c.x >= area.x && c.x + c.w <= area.x + area.w && c.y >= area.y && c.y + c.h <= area.y + area.h)
          << "rank " << r;
      EXPECT_EQ(grid_rank_at(g, c.x + c.w / 2, c.y + c.h / 2), r);
    }
    for (int p = 1; p < s.pp; ++p)
      EXPECT_GT(g.stages[std::size_t(p)].x, g.stages[std::size_t(p - 1)].x + g.stages[std::size_t(p - 1)].w - 0.01f);
    for (int d = 1; d < s.dp; ++d) EXPECT_GT(g.replicas[std::size_t(d)].y, g.replicas[std::size_t(d - 1)].y);
    EXPECT_EQ(grid_rank_at(g, area.x - 5, area.y - 5), -1);
  }
}

TEST(LaneRows, UngroupedIsOneRowPerTrackInOrder) {
  const TraceData d = grid_trace({2, 2, 2});
  const std::vector<Track> tracks = layout_tracks(d);
  const auto rows = lane_rows(tracks, {2, 2, 2}, LaneGrouping{});
  ASSERT_EQ(rows.size(), tracks.size());
  for (std::size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i].track, i);
}

TEST(LaneRows, GroupedByStageThenReplicaThenTensorRank) {
  const GridShape s{1, 2, 4};  // dp 1, tp 2, pp 4
  const TraceData d = grid_trace(s);
  std::vector<Track> tracks = layout_tracks(d);
  std::reverse(tracks.begin(), tracks.end());  // the order comes from the grid, not the input
  LaneGrouping g;
  g.by_axis = true;
  const auto rows = lane_rows(tracks, s, g);
  std::vector<std::string> headers;
  std::vector<int> ranks;
  for (const LaneRow& r : rows) {
    if (r.kind == LaneRow::Kind::group) {
      headers.push_back(r.label);
      EXPECT_FALSE(r.folded);
    } else {
      ranks.push_back(tracks[r.track].rank);
    }
  }
  EXPECT_EQ(headers,
            (std::vector<std::string>{
                "stage 0 \xc2\xb7 replica 0 \xc2\xb7 ranks 0-1", "stage 1 \xc2\xb7 replica 0 \xc2\xb7 ranks 2-3",
                "stage 2 \xc2\xb7 replica 0 \xc2\xb7 ranks 4-5", "stage 3 \xc2\xb7 replica 0 \xc2\xb7 ranks 6-7"}));
  ASSERT_EQ(ranks.size(), tracks.size());
  for (std::size_t i = 1; i < ranks.size(); ++i) {  // (pp, dp, tp) never goes back
    const GridCoord a = grid_coord(s, ranks[i - 1]), b = grid_coord(s, ranks[i]);
    EXPECT_LE(std::make_tuple(a.pp, a.dp, a.tp), std::make_tuple(b.pp, b.dp, b.tp)) << "row " << i;
  }
  EXPECT_EQ(group_label({2, 2, 2}, 3), "stage 1 \xc2\xb7 replica 1 \xc2\xb7 ranks 6-7");
  EXPECT_EQ(group_label({4, 1, 2}, 5), "stage 1 \xc2\xb7 replica 1 \xc2\xb7 rank 5");
  EXPECT_EQ(group_place({2, 2, 2}, 3), "stage 1 \xc2\xb7 replica 1");  // a folded row's name: no ranks
}

TEST(LaneRows, FoldAboveThirtyTwoRanksIntoStageReplicaRows) {
  EXPECT_FALSE(fold_by_default({2, 2, 2}));
  EXPECT_FALSE(fold_by_default({2, 4, 4}));  // 32: still a lane per rank
  EXPECT_TRUE(fold_by_default({4, 4, 4}));
  const GridShape s{8, 8, 8};  // 512 ranks: 1024 tracks fold into 64 rows
  const TraceData d = grid_trace(s);
  const std::vector<Track> tracks = layout_tracks(d);
  ASSERT_EQ(tracks.size(), 1024u);
  LaneGrouping g;
  g.by_axis = true;
  g.fold_default = fold_by_default(s);
  auto rows = lane_rows(tracks, s, g);
  ASSERT_EQ(rows.size(), 64u);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_TRUE(rows[i].folded);
    EXPECT_EQ(rows[i].group, int(i));
    ASSERT_EQ(rows[i].members.size(), 16u);  // 8 ranks × (main, comm)
    for (std::size_t m : rows[i].members) EXPECT_EQ(tracks[m].rank / 8, int(i));
  }
  g.toggled = {3};  // the learner opens stage 0, replica 3
  rows = lane_rows(tracks, s, g);
  ASSERT_EQ(rows.size(), 64u + 16u);
  EXPECT_FALSE(rows[3].folded);
  EXPECT_EQ(rows[3].members.size(), 16u);
  for (std::size_t i = 4; i < 20; ++i) EXPECT_EQ(tracks[rows[i].track].rank / 8, 3);
  EXPECT_TRUE(rows[20].folded);
  EXPECT_EQ(rows[20].group, 4);
}

TEST(FoldActivity, UnionOfTheGroupsRanksByAxis) {
  std::vector<Event> ev = {
      span(0, EventKind::compute, 0, 1000), span(1, EventKind::collective, 1000, 2000, GroupAxis::dp, kStreamComm),
      span(0, EventKind::send, 3000, 4000, GroupAxis::pp), span(2, EventKind::compute, 2000, 3000),  // another group
      span(1, EventKind::phase, 0, 4000)};
  for (int i = 0; i < 200; ++i)
    ev.push_back(span(1, EventKind::collective, 2200 + 2 * i, 2201 + 2 * i, GroupAxis::tp));  // sub-pixel
  ev.push_back(span(0, EventKind::collective, 2650, 2800));                                   // a world collective
  const TraceData d = crafted(4, ev);
  const std::vector<Track> tracks = layout_tracks(d);
  std::vector<std::size_t> members;
  for (std::size_t i = 0; i < tracks.size(); ++i)
    if (tracks[i].rank < 2) members.push_back(i);
  TimeAxis axis;
  axis.t0 = 0, axis.t1 = 4000, axis.x0 = 50, axis.width = 400;  // 10 ns per pixel
  const std::vector<std::uint8_t> cols = fold_activity(d, tracks, members, axis);
  ASSERT_EQ(cols.size(), 400u);
  EXPECT_EQ(cols[50], kActCompute);
  EXPECT_EQ(cols[150], kActDp);
  EXPECT_EQ(cols[210], 0) << "rank 2's compute is another group's";
  EXPECT_EQ(cols[230], kActTp) << "folded sub-pixel collectives still show";
  EXPECT_EQ(cols[270], kActWorld);
  EXPECT_EQ(cols[350], kActPp);
  EXPECT_EQ(activity_bit(span(0, EventKind::phase, 0, 1)), 0);
  EXPECT_EQ(activity_bit(span(0, EventKind::recv, 0, 1, GroupAxis::pp)), kActPp);
}
