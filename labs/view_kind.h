// The views a lab shows in dtlab-viz (DESIGN.md, Visualizer). A lab lists its own in its
// LabInfo; the visualizer keeps one panel per kind (viz/app/panels.cpp) and lays out the
// ones the lab lists, the first the largest. Header-only: viz/model uses it for layout.
#pragma once

#include <string_view>

namespace dtl {

enum class ViewKind {
  ring,      // ranks on a circle, chunks moving (collectives)
  timeline,  // a lane per rank and stream with a time axis (every lab)
  memory,    // per-rank stacked bars by tag beside the formula's line
  report,    // measured vs predicted
  pipeline,  // a row per stage of F/B/W blocks and the bubble between them (pipeline)
  split,     // which rank holds which slice of each weight matrix, f and g (tensor_parallel)
  topology,  // the dp × tp × pp grid of ranks and the groups each belongs to (grid)
};
inline constexpr ViewKind kAllViewKinds[] = {ViewKind::ring, ViewKind::timeline, ViewKind::memory, ViewKind::report,
                                             ViewKind::pipeline, ViewKind::split, ViewKind::topology};

constexpr std::string_view view_kind_name(ViewKind v) {
  switch (v) {
    case ViewKind::ring: return "ring";
    case ViewKind::timeline: return "timeline";
    case ViewKind::memory: return "memory";
    case ViewKind::report: return "report";
    case ViewKind::pipeline: return "pipeline";
    case ViewKind::split: return "split";
    case ViewKind::topology: return "topology";
  }
  return "?";
}

}  // namespace dtl
