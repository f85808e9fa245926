// The timeline's rows when its lanes are grouped by parallelism axis, plain code so tests
// can check it. With a grid (viz/model/grid_model.h), the tracks go in (pp, dp, tp) order
// of their ranks under a header per pipeline stage × data-parallel replica ("stage 0 ·
// replica 1 · ranks 2-3"). A group can be folded into one row that shows the union of its
// ranks' activity (fold_activity): compute, and communication by axis. Above
// kFoldAboveRanks ranks every group starts folded, so 512 ranks are 64 rows, not 1500.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "viz/model/grid_model.h"
#include "viz/model/layout.h"

namespace dtl::viz {

inline constexpr int kFoldAboveRanks = 32;

struct LaneRow {
  enum class Kind : std::uint8_t { track, group };
  Kind kind = Kind::track;
  std::size_t track = 0;             // track: index into the tracks
  int group = -1;                    // the (pp, dp) group, index pp·D + dp; -1 when not grouped
  bool folded = false;               // group: one row of its ranks' activity (else a header above its tracks)
  std::vector<std::size_t> members;  // group: the tracks of its ranks
  std::string label;                 // group: "stage 0 · replica 1 · ranks 2-3"
  std::string place;                 // group: its place in the grid alone, "stage 0 · replica 1" (a folded row's name)
};

struct LaneGrouping {
  bool by_axis = false;       // false: one row per track, in the tracks' order
  bool fold_default = false;  // groups start folded (more than kFoldAboveRanks ranks)
  std::set<int> toggled;      // groups the learner folded or unfolded against the default
  bool folded(int group) const { return fold_default != (toggled.count(group) > 0); }
};

bool fold_by_default(const GridShape& s);  // more than kFoldAboveRanks ranks

// The rows of the timeline. Tracks of ranks outside the grid go last, ungrouped.
std::vector<LaneRow> lane_rows(const std::vector<Track>& tracks, const GridShape& shape, const LaneGrouping& g);

// "stage 0 · replica 1 · ranks 2-3" (the ranks of a (pp, dp) group are consecutive).
std::string group_label(const GridShape& s, int group);
std::string group_place(const GridShape& s, int group);  // group_label without the ranks

// What a folded row shows in one pixel column: bits of what any member ran there.
enum ActivityBits : std::uint8_t { kActCompute = 1, kActDp = 2, kActTp = 4, kActPp = 8, kActWorld = 16 };
std::uint8_t activity_bit(const Event& e);  // 0 for phases, marks and memory events
// Per pixel column of the axis window (axis.width columns from axis.x0), the union of the
// member tracks' activity. Cost follows pixels: visible_boxes() folds runs narrower than a
// pixel, and a fold contributes the bits of at most kFoldSample of its events.
inline constexpr std::uint32_t kFoldSample = 64;
std::vector<std::uint8_t> fold_activity(const TraceData& d, const std::vector<Track>& tracks,
                                        const std::vector<std::size_t>& members, const TimeAxis& axis);

}  // namespace dtl::viz
