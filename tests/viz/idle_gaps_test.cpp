// The timeline's one idle (issue 47) on crafted spans: a rank is idle where no compute span
// runs on it; its communication (a collective, a receive) is idle time too. BusyIndex's
// fraction and its gaps (what the timeline hatches) against sums written out by hand.
#include <gtest/gtest.h>

#include "viz/model/layout.h"
#include "viz/model/step_idle.h"

using namespace dtl;
using namespace dtl::viz;

namespace {
Event span(EventKind kind, int rank, std::int64_t b, std::int64_t e) {
  Event x;
  x.kind = kind, x.rank = rank, x.begin_ns = b, x.end_ns = e;
  return x;
}
}  // namespace

TEST(OneIdle, CommunicationIsIdleComputeIsWork) {
  TraceData d;
  d.ranks = 2;
  // rank 0: compute [0,10) and [30,40), a collective [10,30) between (waiting: idle),
  // a nested compute [32,35) inside the second (counted once); rank 1: only a receive.
  d.events = {span(EventKind::compute, 0, 0, 10), span(EventKind::collective, 0, 10, 30),
              span(EventKind::compute, 0, 30, 40), span(EventKind::compute, 0, 32, 35),
              span(EventKind::recv, 1, 0, 40)};
  const BusyIndex busy(d);
  EXPECT_DOUBLE_EQ(busy.idle_fraction(0, 0, 50), 30.0 / 50);  // [10,30) and [40,50)
  EXPECT_DOUBLE_EQ(idle_fraction(d, 0, 0, 50), 30.0 / 50);    // the plain pass agrees
  EXPECT_DOUBLE_EQ(busy.idle_fraction(1, 0, 50), 1.0);
  EXPECT_DOUBLE_EQ(mean_idle(busy, 2, {0, 50}), (30.0 / 50 + 1.0) / 2);
  const std::vector<TimeRange> gaps = busy.idle_gaps(0, 5, 50, 1);
  ASSERT_EQ(gaps.size(), 2u);
  EXPECT_EQ(gaps[0].begin, 10);
  EXPECT_EQ(gaps[0].end, 30);
  EXPECT_EQ(gaps[1].begin, 40);
  EXPECT_EQ(gaps[1].end, 50);
  EXPECT_EQ(busy.idle_gaps(0, 5, 50, 11).size(), 1u);  // narrower than 11 ns: under a pixel, not drawn
  EXPECT_TRUE(busy.idle_gaps(0, 0, 10, 1).empty());
  EXPECT_EQ(busy.idle_gaps(1, 0, 50, 1).size(), 1u);  // all of it
}
