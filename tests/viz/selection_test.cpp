// Range selection's totals (viz/model/selection.h) on crafted spans, every figure written
// out by hand: which spans count (overlap, not containers), clipping to the range, count,
// total, mean, share, the order of the rows, and a selection of some ranks.
#include "viz/model/selection.h"

#include <gtest/gtest.h>

using namespace dtl;
using namespace dtl::viz;

namespace {
Event span(EventKind kind, int rank, std::uint16_t label, std::int64_t b, std::int64_t e) {
  Event x;
  x.kind = kind, x.rank = rank, x.label = label, x.begin_ns = b, x.end_ns = e;
  return x;
}

TraceData crafted() {
  TraceData d;
  d.ranks = 2;
  d.labels = {"", "F", "all_reduce", "recv", "phase"};
  d.events = {span(EventKind::phase, 0, 4, 0, 1000),        // a container: never totalled
              span(EventKind::compute, 0, 1, 0, 100),       // ends where the range begins: outside
              span(EventKind::compute, 1, 1, 50, 120),      // 20 ns inside
              span(EventKind::collective, 0, 2, 100, 150),  // 50 inside
              span(EventKind::compute, 0, 1, 150, 250),     // 100 inside
              span(EventKind::recv, 1, 3, 200, 400),        // 100 inside (clipped at 300)
              span(EventKind::mark, 1, 4, 250, 250)};       // an instant: no length
  return d;
}
}  // namespace

TEST(Selection, TotalsByNameAndKindOverEveryRank) {
  const SelectionTotals t = selection_totals(crafted(), {100, 300});
  EXPECT_EQ(t.ranks, 2);
  ASSERT_EQ(t.by_name.size(), 3u);
  // F: two spans, 100 + 20 ns; the rank-time selected is 200 ns x 2 ranks.
  EXPECT_EQ(t.by_name[0].name, "F");
  EXPECT_EQ(t.by_name[0].kind, EventKind::compute);
  EXPECT_EQ(t.by_name[0].count, 2u);
  EXPECT_DOUBLE_EQ(t.by_name[0].total_ns, 120);
  EXPECT_DOUBLE_EQ(t.by_name[0].mean_ns, 60);
  EXPECT_DOUBLE_EQ(t.by_name[0].share, 120.0 / 400);
  EXPECT_EQ(t.by_name[1].name, "recv");
  EXPECT_DOUBLE_EQ(t.by_name[1].total_ns, 100);
  EXPECT_DOUBLE_EQ(t.by_name[1].share, 0.25);
  EXPECT_EQ(t.by_name[2].name, "all_reduce");
  EXPECT_EQ(t.by_name[2].count, 1u);
  EXPECT_DOUBLE_EQ(t.by_name[2].total_ns, 50);
  ASSERT_EQ(t.by_kind.size(), 3u);  // compute, recv, collective (in the kinds' order)
  EXPECT_EQ(t.by_kind[0].kind, EventKind::compute);
  EXPECT_DOUBLE_EQ(t.by_kind[0].total_ns, 120);
  EXPECT_EQ(t.by_kind[1].kind, EventKind::recv);
  EXPECT_EQ(t.by_kind[2].kind, EventKind::collective);
  EXPECT_DOUBLE_EQ(t.by_kind[2].share, 50.0 / 400);
}

TEST(Selection, SomeRanksAndEmptyRanges) {
  const SelectionTotals one = selection_totals(crafted(), {100, 300}, {false, true});
  EXPECT_EQ(one.ranks, 1);
  ASSERT_EQ(one.by_name.size(), 2u);
  EXPECT_EQ(one.by_name[0].name, "recv");
  EXPECT_DOUBLE_EQ(one.by_name[0].share, 100.0 / 200);
  EXPECT_EQ(one.by_name[1].name, "F");
  EXPECT_DOUBLE_EQ(one.by_name[1].total_ns, 20);
  EXPECT_TRUE(selection_totals(crafted(), {300, 300}).by_name.empty());
  EXPECT_TRUE(selection_totals(crafted(), {2000, 3000}).by_kind.empty());
}
