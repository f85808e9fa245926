// Where the lab's views go in the window, plain code so tests can check it. The lab
// lists its views main one first (LabInfo::views). The timeline wants the full width: it
// takes the top band when it is the main view, else the bottom one. The other views share
// the remaining band: the first of them takes the left half, the rest stack on the right
// (side by side when there are only two). So the collectives lab (ring, report, memory,
// timeline) gets its ring beside report over memory, above the timeline; DDP (timeline,
// memory, report) gets the timeline above memory beside report.
#pragma once

#include <vector>

#include "labs/view_kind.h"

namespace dtl::viz {

struct Rect {
  float x = 0, y = 0, w = 0, h = 0;
};

struct PanelPlace {
  ViewKind kind = ViewKind::timeline;
  Rect rect;
};

// Below this a panel's text and pictures no longer read (a 1024 × 640 window tiled as above
// squeezes the memory bars to 140 px): then every view gets the full width and they stack,
// each at least kStackedPanelH tall, in a column taller than the window that scrolls.
inline constexpr float kMinPanelW = 440, kMinPanelH = 160, kStackedPanelH = 320;

// `gap` pixels between panels. Views listed twice are placed once. Tiled within `area`, or
// stacked below its top when a tile would be smaller than kMinPanelW × kMinPanelH (the
// places then reach below the area: the caller scrolls).
std::vector<PanelPlace> arrange_panels(const std::vector<ViewKind>& views, Rect area, float gap);

}  // namespace dtl::viz
