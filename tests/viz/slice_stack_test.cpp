// The timeline as a nested slice stack (issue 47), on crafted spans: what a span holds goes
// one lane down, whatever its kind (a collective's phase and its sends, a pass and its
// layers), and a span wide enough to draw is never folded into a narrow neighbour's box.
#include <gtest/gtest.h>

#include "viz/model/layout.h"

using namespace dtl;
using namespace dtl::viz;

namespace {
Event span(EventKind kind, std::uint16_t label, std::int64_t b, std::int64_t e) {
  Event x;
  x.kind = kind, x.rank = 0, x.label = label, x.begin_ns = b, x.end_ns = e;
  return x;
}
}  // namespace

// A ring all-reduce's phase holds its sends and receives: they go on the lane below it,
// so the phase no longer swallows them ("11 events" in one grey box).
TEST(SliceStack, TransfersGoUnderTheirPhase) {
  TraceData d;
  d.ranks = 1;
  d.labels = {"", "ring all_reduce", "send", "recv"};
  d.events = {span(EventKind::phase, 1, 0, 1000), span(EventKind::send, 2, 100, 300),
              span(EventKind::recv, 3, 400, 600), span(EventKind::send, 2, 700, 900)};
  const std::vector<Track> tracks = layout_tracks(d);
  ASSERT_EQ(tracks.size(), 2u);
  ASSERT_EQ(tracks[0].events.size(), 1u);
  EXPECT_EQ(d.events[tracks[0].events[0]].kind, EventKind::phase);
  EXPECT_EQ(tracks[1].events.size(), 3u);
  TimeAxis axis;  // 1000 ns on 1000 px: every span is its own box
  axis.t0 = 0, axis.t1 = 1000, axis.x0 = 0, axis.width = 1000;
  for (const Track& t : tracks)
    for (const DrawBox& b : visible_boxes(d, t, axis, 3)) EXPECT_EQ(b.count, 1u) << "lane " << t.lane;
}

// A 1-ns receive, then a 500-ns compute starting in the same pixel: the receive folds alone,
// the compute is drawn as itself.
TEST(SliceStack, AWideSpanIsNotFoldedIntoANarrowOne) {
  TraceData d;
  d.ranks = 1;
  d.labels = {"", "recv", "forward"};
  d.events = {span(EventKind::recv, 1, 0, 1), span(EventKind::compute, 2, 2, 502)};
  const std::vector<Track> tracks = layout_tracks(d);
  ASSERT_EQ(tracks.size(), 1u);
  TimeAxis axis;  // 10 ns a pixel
  axis.t0 = 0, axis.t1 = 10000, axis.x0 = 0, axis.width = 1000;
  const std::vector<DrawBox> boxes = visible_boxes(d, tracks[0], axis, 3);
  ASSERT_EQ(boxes.size(), 2u);
  EXPECT_EQ(boxes[0].count, 1u);
  EXPECT_EQ(d.label(d.events[boxes[1].event].label), "forward");
  EXPECT_FLOAT_EQ(boxes[1].x1 - boxes[1].x0, 50.0f);
}
