// Timeline lanes: the rows under the time axis. Without a grid, a track per rank, stream
// and lane. Grouped by axis (traces with meta "grid"), the tracks in (pp, dp, tp) order
// under a header per stage × replica; a folded group is one row of its ranks' activity
// (compute, and communication in the axis colors; hatched where no rank computes: idle as
// the timeline's one definition, viz/model/step_idle.h), opened
// or folded by a click on its name. Rows come from viz/model/lane_groups.
#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include "viz/app/views.h"

namespace dtl::viz {

struct LaneFlows {
  std::unordered_map<std::uint64_t, ImVec2> send_at;  // flow id → where its send starts
  std::vector<std::pair<std::uint64_t, ImVec2>> recv_at;
};

namespace {

constexpr float kRowHeight = 18, kHeaderHeight = 17, kFoldedHeight = 25, kMinBoxPx = 3;
constexpr ImU32 kIdle = IM_COL32(200, 70, 70, 60), kText = IM_COL32(220, 220, 225, 255);

const char* kind_text(EventKind k) {
  switch (k) {
    case EventKind::compute: return "compute";
    case EventKind::send: return "send";
    case EventKind::recv: return "recv";
    case EventKind::collective: return "collective";
    case EventKind::phase: return "phase";
    default: return "event";
  }
}

void tooltip(const TraceData& d, const DrawBox& box) {
  ImGui::BeginTooltip();
  const Event& e = d.events[box.event];
  if (box.count > 1) {
    ImGui::Text("%u events folded here (zoom in to see them)", box.count);
  } else {
    const std::string name = d.label(e.label);
    ImGui::Text("%s%s%s", kind_text(e.kind), name.empty() ? "" : ": ", name.c_str());
    if (const std::string what = role_key(d.role(e)); !what.empty())
      ImGui::TextDisabled("%s", what.c_str());  // its typed role
    ImGui::Text("rank %d, %.3f us", e.rank, double(e.end_ns - e.begin_ns) / 1e3);
    if (e.bytes) ImGui::Text("%llu bytes", static_cast<unsigned long long>(e.bytes));
    if (e.peer >= 0) ImGui::Text("%s rank %d, tag %d", e.kind == EventKind::send ? "to" : "from", e.peer, e.tag);
    if (e.axis != GroupAxis::none || e.group_rank >= 0)
      ImGui::Text("%s group, rank %d in it", group_axis_name(e.axis), e.group_rank);
    if (e.step >= 0) ImGui::Text("step %d", e.step);
    if (e.chunk >= 0)
      ImGui::Text("chunk %d (x%d)%s", e.chunk, e.chunk_count, (e.flags & kFlagReduce) ? ", reduced" : "");
    if (e.micro_batch >= 0) ImGui::Text("micro-batch %d", e.micro_batch);
  }
  ImGui::EndTooltip();
}

ImU32 dimmed(ImU32 c) { return (c & 0x00ffffffu) | (IM_COL32(0, 0, 0, 80) & 0xff000000u); }

// A folded row's strips, top to bottom, and what each shows.
struct Strip {
  std::uint8_t bit;
  const char* name;
};
constexpr Strip kStrips[] = {
    {kActCompute, "compute"}, {kActDp, "dp"}, {kActTp, "tp"}, {kActPp, "pp"}, {kActWorld, "world"}};

ImU32 strip_color(std::uint8_t bit) {  // the colors of the unfolded lanes: compute, the axes, a world collective
  switch (bit) {
    case kActDp: return axis_color(GroupAxis::dp);
    case kActTp: return axis_color(GroupAxis::tp);
    case kActPp: return axis_color(GroupAxis::pp);
    case kActWorld: return kind_color(EventKind::collective);
    default: return kind_color(EventKind::compute);
  }
}

void fold_tooltip(const LaneRow& row, std::uint8_t bits) {
  ImGui::BeginTooltip();
  ImGui::Text("%s (%zu lanes folded)", row.label.c_str(), row.members.size());
  std::string what;
  for (const Strip& s : kStrips)
    if (bits & s.bit) what += (what.empty() ? "" : ", ") + std::string(s.name);
  ImGui::Text("here: %s", what.empty() ? "nothing runs" : what.c_str());
  if (!(bits & kActCompute)) ImGui::TextUnformatted("every rank idle (no compute)");
  ImGui::TextDisabled("click the name to %s", row.folded ? "open the group" : "fold it");
  ImGui::EndTooltip();
}

}  // namespace

float TimelineView::LabelWidth() const {
  return std::max({grouping.by_axis ? 168.0f : 118.0f, names_w_, min_label_width});
}

float TimelineView::RowHeight(const LaneRow& row) const {
  return row.kind == LaneRow::Kind::track ? kRowHeight : row.folded ? kFoldedHeight : kHeaderHeight;
}

void TimelineView::GroupLanes(const Frame& f) {
  const TraceData& d = f.session.data();
  const auto it = d.meta.find(kGridMeta);
  const std::size_t grid_key = it == d.meta.end() ? 0 : it->second.size() + 1;
  if (!grouping_set || grid_key != grid_key_) {  // the grid's defaults, once (a live run writes its meta early)
    grid_ = grid_model(d);
    grid_key_ = grid_key;
    grouping.by_axis = !grid_.empty() && grid_.ranks() > 1;
    grouping.fold_default = !grid_.empty() && fold_by_default(grid_.shape);
    grouping.toggled.clear();
    grouping_set = true;
  }
  std::size_t toggles = grouping.toggled.size();
  for (int g : grouping.toggled) toggles = toggles * 31 + std::size_t(g);
  const std::array<std::size_t, 5> key = {reinterpret_cast<std::size_t>(&d), f.session.tracks().size(),
                                          grouping.by_axis, grouping.fold_default, toggles};
  if (key == rows_key_) return;
  rows_key_ = key;
  rows_ = lane_rows(f.session.tracks(), grid_.empty() ? GridShape{0, 0, 0} : grid_.shape, grouping);
}

void TimelineView::DrawGroupRow(const Frame& f, const LaneRow& row, float x0, float y, float w, bool hovered) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImGuiIO& io = ImGui::GetIO();
  const float h = RowHeight(row), line = ImGui::GetTextLineHeight();
  dl->AddRectFilled(ImVec2(x0, y), ImVec2(x0 + w, y + h), IM_COL32(255, 255, 255, row.folded ? 16 : 30));
  dl->AddLine(ImVec2(x0, y), ImVec2(x0 + w, y), IM_COL32(200, 200, 215, 90));
  const float cy = y + h / 2;  // a triangle: pointing right when folded, down when open
  if (row.folded)
    dl->AddTriangleFilled(ImVec2(x0 + 3, cy - 4), ImVec2(x0 + 3, cy + 4), ImVec2(x0 + 9, cy), kText);
  else
    dl->AddTriangleFilled(ImVec2(x0 + 2, cy - 3), ImVec2(x0 + 10, cy - 3), ImVec2(x0 + 6, cy + 3), kText);
  const bool on_name = hovered && io.MousePos.y >= y && io.MousePos.y < y + h && io.MousePos.x < axis.x0;
  if (on_name && ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {
    if (!grouping.toggled.erase(row.group)) grouping.toggled.insert(row.group);
  }
  if (!row.folded) {  // a header above its tracks: the whole label across the row
    dl->AddText(ImVec2(x0 + 14, y + (h - line) / 2), kText, row.label.c_str());
    return;
  }
  dl->PushClipRect(ImVec2(x0, y), ImVec2(axis.x0 - 2, y + h), true);
  dl->AddText(ImVec2(x0 + 14, y + (h - line) / 2), kText, row.place.c_str());  // "stage 0 · replica 1"
  dl->PopClipRect();
  const std::vector<std::uint8_t> cols = fold_activity(f.session.data(), f.session.tracks(), row.members, axis);
  const float strip = (h - 4) / float(std::size(kStrips));
  for (std::size_t c = 0; c < cols.size();) {  // runs of equal columns, each drawn once
    std::size_t e = c + 1;
    while (e < cols.size() && cols[e] == cols[c]) ++e;
    const float a = axis.x0 + float(c), b = axis.x0 + float(e);
    if (!(cols[c] & kActCompute)) dl->AddRectFilled(ImVec2(a, y + 3), ImVec2(b, y + h - 3), kIdle);  // one idle
    for (std::size_t s = 0; s < std::size(kStrips); ++s)
      if (cols[c] & kStrips[s].bit)
        dl->AddRectFilled(ImVec2(a, y + 2 + strip * float(s)), ImVec2(b, y + 2 + strip * float(s + 1)),
                          strip_color(kStrips[s].bit));
    c = e;
  }
  if (on_name)
    ImGui::SetTooltip("%s: %zu lanes folded into this row; click to open", row.label.c_str(), row.members.size());
  else if (hovered && io.MousePos.y >= y && io.MousePos.y < y + h && io.MousePos.x >= axis.x0 &&
           io.MousePos.x < axis.x0 + float(cols.size()))
    fold_tooltip(row, cols[std::size_t(io.MousePos.x - axis.x0)]);
}

namespace {

// A lane by what it carries: "main" and "comm" for a stream's first lane; under it, what
// nests there: a model's layers inside forward and backward, the transfers inside a phase.
// A lane can hold several kinds at one depth (a pipeline stage's receives beside its F and B,
// all children of the schedule's phase): each kind among its first events is named, in a fixed
// order ("main: F/B+p2p"), never the first event's alone.
std::string lane_name(const TraceData& d, const Track& tr) {
  std::string stream = tr.stream == kStreamMain ? "main" : "comm";  // (returned: not const, so it moves)
  if (tr.lane == 0 || tr.events.empty()) return stream;
  constexpr const char* kKinds[] = {"layers", "F/B", "compute", "p2p", "collectives"};  // short: the name column
  bool has[std::size(kKinds)] = {};
  const std::size_t look = std::min<std::size_t>(tr.events.size(), 256);  // bounded: drawn every frame
  for (std::size_t i = 0; i < look; ++i) {
    const Event& e = d.events[tr.events[i]];
    const Role& role = d.role(e);
    if (e.kind == EventKind::compute) has[role.block >= 0 ? 0 : role.pass != Pass::none ? 1 : 2] = true;
    if (e.kind == EventKind::send || e.kind == EventKind::recv) has[3] = true;
    if (e.kind == EventKind::collective) has[4] = true;
  }
  std::string kinds;
  for (std::size_t k = 0; k < std::size(kKinds); ++k) {
    if (!has[k]) continue;
    if (!kinds.empty()) kinds += '+';
    kinds += kKinds[k];
  }
  return kinds.empty() ? stream + " " + std::to_string(tr.lane + 1) : stream + ": " + kinds;
}

}  // namespace

void TimelineView::DrawTrack(const Frame& f, std::size_t track, float x0, float y, bool hovered, LaneFlows& flows) {
  const TraceData& d = f.session.data();
  const Track& tr = f.session.tracks()[track];
  const ImGuiIO& io = ImGui::GetIO();
  const std::int64_t now = f.cursor_time();
  const bool dim_future = !f.session.live() && f.cursor < f.session.steps().size();  // replay: what is still to come
  ImDrawList* dl = ImGui::GetWindowDrawList();
  char name[128];
  const auto& names = f.session.index().rank_names;
  const std::string who = tr.rank >= 0 && std::size_t(tr.rank) < names.size() ? names[std::size_t(tr.rank)]
                                                                              : "rank " + std::to_string(tr.rank);
  std::snprintf(name, sizeof name, "%s%s %s", grouping.by_axis ? "  " : "", who.c_str(), lane_name(d, tr).c_str());
  const float indent = grouping.by_axis ? 8 : 0;
  dl->AddRectFilled(ImVec2(x0 + 3 + indent, y + 4), ImVec2(x0 + 7 + indent, y + kRowHeight - 4),
                    rank_color(tr.rank));  // the rank's own color
  dl->PushClipRect(ImVec2(x0, y), ImVec2(std::max(x0 + 10, axis.x0 - 2), y + kRowHeight), true);  // its column
  dl->AddText(ImVec2(x0 + 10, y + 2), kText, name);
  dl->PopClipRect();
  if (tr.stream == kStreamMain && tr.lane == 0) {  // idle (no compute on the rank: BusyIndex), under the spans
    const std::int64_t px_ns = std::int64_t((axis.t1 - axis.t0) / std::max(1.0f, axis.width)) + 1;
    for (const TimeRange& g : f.session.busy().idle_gaps(tr.rank, std::int64_t(axis.t0), std::int64_t(axis.t1), px_ns))
      dl->AddRectFilled(ImVec2(axis.to_x(double(g.begin)), y + 3), ImVec2(axis.to_x(double(g.end)), y + kRowHeight - 3),
                        kIdle);
  }
  for (const DrawBox& box : visible_boxes(d, tr, axis, kMinBoxPx)) {
    const Event& e = d.events[box.event];
    ImU32 col = box.count > 1 ? IM_COL32(140, 140, 150, 255) : span_color(e);
    if (dim_future && e.begin_ns > now) col = dimmed(col);
    const ImVec2 a(box.x0, y + 2), b(std::max(box.x1, box.x0 + 1), y + kRowHeight - 2);
    dl->AddRectFilled(a, b, col, 2.0f);
    if (box.x1 - box.x0 > 5) dl->AddRect(a, b, IM_COL32(10, 10, 14, 160), 2.0f);  // neighbouring layers stay apart
    if (box.x1 - box.x0 > 40) {
      char text[64];
      if (box.count > 1)
        std::snprintf(text, sizeof text, "%u events", box.count);
      else if (e.kind == EventKind::collective && !role_purpose(d.role(e)).empty())  // a bucket's, a layer's
        std::snprintf(text, sizeof text, "%s · %s", d.label(e.label).c_str(), role_purpose(d.role(e)).c_str());
      else
        std::snprintf(text, sizeof text, "%s", d.label(e.label).empty() ? kind_text(e.kind) : d.label(e.label).c_str());
      dl->PushClipRect(ImVec2(box.x0, y), ImVec2(box.x1, y + kRowHeight), true);
      dl->AddText(ImVec2(box.x0 + 3, y + 2), IM_COL32(15, 15, 20, 255), text);
      dl->PopClipRect();
    }
    if (hovered && io.MousePos.y >= y && io.MousePos.y < y + kRowHeight && io.MousePos.x >= box.x0 &&
        io.MousePos.x <= std::max(box.x1, box.x0 + 2))
      tooltip(d, box);
    if (show_flows && box.count == 1 && e.flow_id) {
      if (e.kind == EventKind::send) flows.send_at[e.flow_id] = ImVec2(box.x0, y + kRowHeight / 2);
      if (e.kind == EventKind::recv) flows.recv_at.push_back({e.flow_id, ImVec2(box.x1, y + kRowHeight / 2)});
    }
  }
}

void TimelineView::DrawLanes(const Frame& f, ImVec2 top, ImVec2 size, bool hovered) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  LaneFlows flows;
  first_row = std::min(first_row, rows_.empty() ? 0 : rows_.size() - 1);
  float y = top.y;
  std::size_t i = first_row;
  for (; i < rows_.size() && y < top.y + size.y; ++i) {
    const LaneRow& row = rows_[i];
    if (row.kind == LaneRow::Kind::group) {
      DrawGroupRow(f, row, top.x, y, size.x, hovered);
    } else {
      if (i % 2 == 0)
        dl->AddRectFilled(ImVec2(top.x, y), ImVec2(top.x + size.x, y + kRowHeight), IM_COL32(255, 255, 255, 10));
      DrawTrack(f, row.track, top.x, y, hovered, flows);
    }
    y += RowHeight(row);
  }
  for (const auto& [id, to] : flows.recv_at) {  // arrows: send start → receive end
    auto it = flows.send_at.find(id);
    if (it == flows.send_at.end()) continue;
    dl->AddLine(it->second, to, IM_COL32(230, 230, 240, 110), 1.0f);
    dl->AddTriangleFilled(ImVec2(to.x, to.y), ImVec2(to.x - 5, to.y - 3), ImVec2(to.x - 5, to.y + 3),
                          IM_COL32(230, 230, 240, 160));
  }
  if (first_row > 0 || i < rows_.size()) {  // more rows than fit: say which are shown
    char text[96];
    std::snprintf(text, sizeof text, "rows %zu-%zu of %zu (wheel over the names)", first_row + 1, i, rows_.size());
    const ImVec2 ts = ImGui::CalcTextSize(text), at(top.x + size.x - ts.x - 8, top.y + size.y - ts.y - 4);
    dl->AddRectFilled(ImVec2(at.x - 4, at.y - 2), ImVec2(at.x + ts.x + 4, at.y + ts.y + 2), IM_COL32(20, 20, 26, 220),
                      3.0f);
    dl->AddText(at, kText, text);
  }
}

}  // namespace dtl::viz
