#include "viz/model/lane_groups.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace dtl::viz {

bool fold_by_default(const GridShape& s) { return s.size() > kFoldAboveRanks; }

std::string group_place(const GridShape& s, int group) {
  return "stage " + std::to_string(group / s.dp) + " \xc2\xb7 replica " + std::to_string(group % s.dp);
}

std::string group_label(const GridShape& s, int group) {
  const int first = group * s.tp, last = first + s.tp - 1;
  return group_place(s, group) + " \xc2\xb7 " +
         (first == last ? "rank " + std::to_string(first)
                        : "ranks " + std::to_string(first) + "-" + std::to_string(last));
}

std::vector<LaneRow> lane_rows(const std::vector<Track>& tracks, const GridShape& s, const LaneGrouping& g) {
  std::vector<LaneRow> rows;
  if (!g.by_axis || s.size() <= 0) {
    for (std::size_t i = 0; i < tracks.size(); ++i) rows.push_back({LaneRow::Kind::track, i, -1, false, {}, {}, {}});
    return rows;
  }
  // (pp, dp, tp) of the rank, then the track's own order (stream, lane): stable.
  std::vector<std::size_t> order(tracks.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto key = [&](std::size_t i) {
    const int r = tracks[i].rank;
    if (r < 0 || r >= s.size()) return std::array<int, 3>{s.pp, 0, r};  // outside the grid: last
    const GridCoord c = grid_coord(s, r);
    return std::array<int, 3>{c.pp, c.dp, c.tp};
  };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
  int current = -2;
  std::size_t header = 0;  // the current group's row
  for (std::size_t i : order) {
    const int r = tracks[i].rank;
    const int group = r >= 0 && r < s.size() ? r / s.tp : -1;  // pp·D + dp: ranks of a group are consecutive
    if (group != current) {
      current = group;
      header = rows.size();
      if (group >= 0)
        rows.push_back(
            {LaneRow::Kind::group, 0, group, g.folded(group), {}, group_label(s, group), group_place(s, group)});
    }
    if (group >= 0) rows[header].members.push_back(i);
    if (group < 0 || !rows[header].folded) rows.push_back({LaneRow::Kind::track, i, group, false, {}, {}, {}});
  }
  return rows;
}

std::uint8_t activity_bit(const Event& e) {
  if (e.kind == EventKind::compute) return kActCompute;
  if (e.kind != EventKind::send && e.kind != EventKind::recv && e.kind != EventKind::collective) return 0;
  switch (e.axis) {
    case GroupAxis::dp: return kActDp;
    case GroupAxis::tp: return kActTp;
    case GroupAxis::pp: return kActPp;
    case GroupAxis::none: return kActWorld;
  }
  return kActWorld;
}

std::vector<std::uint8_t> fold_activity(const TraceData& d, const std::vector<Track>& tracks,
                                        const std::vector<std::size_t>& members, const TimeAxis& axis) {
  const int width = std::max(1, int(std::lround(axis.width)));
  std::vector<std::uint8_t> cols(std::size_t(width), 0);
  auto mark = [&](float x0, float x1, std::uint8_t bit) {
    const int a = std::clamp(int(std::floor(x0 - axis.x0)), 0, width - 1);
    const int b = std::clamp(int(std::ceil(x1 - axis.x0)), a + 1, width);
    for (int c = a; c < b; ++c) cols[std::size_t(c)] |= bit;
  };
  for (std::size_t m : members) {
    if (m >= tracks.size()) continue;
    const Track& tr = tracks[m];
    for (const DrawBox& box : visible_boxes(d, tr, axis, 1.0f)) {
      if (box.x1 < axis.x0 || box.x0 > axis.x0 + axis.width) continue;
      if (box.count == 1) {
        mark(box.x0, box.x1, activity_bit(d.events[box.event]));
        continue;
      }
      // A fold: its events begin in this pixel; the first few say what ran there.
      const std::int64_t t = d.events[box.event].begin_ns;  // the track is sorted by begin: search, then step to it
      auto first = std::lower_bound(tr.events.begin(), tr.events.end(), t,
                                    [&](std::uint32_t i, std::int64_t v) { return d.events[i].begin_ns < v; });
      while (first != tr.events.end() && *first != box.event) ++first;
      const std::size_t at = std::size_t(first - tr.events.begin());
      for (std::size_t k = at; k < std::min<std::size_t>(tr.events.size(), at + std::min(box.count, kFoldSample)); ++k)
        mark(box.x0, box.x1, activity_bit(d.events[tr.events[k]]));
    }
  }
  return cols;
}

}  // namespace dtl::viz
