// The views a lab shows in dtlab-viz (DESIGN.md, Visualizer). A lab lists its own in its
// LabInfo, the main one first. Three are the viewer's and fit every lab (below), a
// fourth (what-if) the labs whose formulas viz/model/what_if.h reruns; a lab's
// own picture (the collectives' ring, the pipeline's stages, ...) is declared in the lab's
// header as `inline constexpr ViewKind kRingView{"ring"}` and its panel lives in the lab's
// folder (viz/views/<lab>/*.cpp, registered with viz::register_panel), so a new view
// edits no viewer file. Header-only: viz/model uses it for layout.
#pragma once

#include <string_view>

namespace dtl {

// A view, named once where it is declared: the name `dtlab-viz --view NAME` takes. Two kinds
// are the same view when their names are.
struct ViewKind {
  std::string_view name;
  friend constexpr bool operator==(ViewKind a, ViewKind b) { return a.name == b.name; }
  static const ViewKind timeline;  // a lane per rank and stream with a time axis (every lab)
  static const ViewKind memory;    // per-rank stacked bars by tag beside the formula's line
  static const ViewKind report;    // measured vs predicted
  static const ViewKind what_if;   // sliders over the run's settings, the formulas' predictions redrawn
};
inline constexpr ViewKind ViewKind::timeline{"timeline"};
inline constexpr ViewKind ViewKind::memory{"memory"};
inline constexpr ViewKind ViewKind::report{"report"};
inline constexpr ViewKind ViewKind::what_if{"what-if"};

constexpr std::string_view view_kind_name(ViewKind v) { return v.name; }

}  // namespace dtl
