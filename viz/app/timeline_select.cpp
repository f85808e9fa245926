// Range selection on the timeline, as Perfetto's area selection: drag over the lanes to
// select a time range; below the lanes, its spans totalled by name and by kind (count,
// total, mean, share of the selected rank-time: viz/model/selection.h). A click clears it;
// right-drag pans, the wheel zooms.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "viz/app/views.h"
#include "viz/model/axes.h"
#include "viz/model/step_idle.h"

namespace dtl::viz {

namespace {

std::string duration_text(double ns) { return format_duration(ns, std::max(1.0, ns / 1000), ns); }

// One table of rows: what, kind, count, total, mean, share.
void totals_table(const char* id, const std::vector<SelectionRow>& rows, bool named) {
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders | ImGuiTableFlags_ScrollY;
  if (!ImGui::BeginTable(id, named ? 6 : 5, flags, ImVec2(0, ImGui::GetContentRegionAvail().y))) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  if (named) ImGui::TableSetupColumn("name", ImGuiTableColumnFlags_WidthStretch, 2);
  ImGui::TableSetupColumn("kind", ImGuiTableColumnFlags_WidthStretch, 1);
  for (const char* c : {"count", "total", "mean", "share"})
    ImGui::TableSetupColumn(c, ImGuiTableColumnFlags_WidthFixed, 78);
  ImGui::TableHeadersRow();
  for (const SelectionRow& r : rows) {
    ImGui::TableNextRow();
    if (named) {
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(r.name.empty() ? "(unnamed)" : r.name.c_str());
    }
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(event_kind_name(r.kind));
    ImGui::TableNextColumn();
    ImGui::Text("%zu", r.count);
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(duration_text(r.total_ns).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(duration_text(r.mean_ns).c_str());
    ImGui::TableNextColumn();
    ImGui::Text("%.1f%%", 100 * r.share);
  }
  ImGui::EndTable();
}

}  // namespace

// --select FROM,TO: the range, in ms from the axis's 0, selected on the first frame.
void TimelineView::StartSelection(const Frame& f) {
  if (!select_at_start_ms) return;
  const double origin = AxisOrigin(f);
  selection = TimeRange{std::int64_t(origin + select_at_start_ms->first * 1e6),
                        std::int64_t(origin + select_at_start_ms->second * 1e6)};
  select_at_start_ms.reset();
}

// Left drag over the lanes selects (a click alone clears); right drag pans; the wheel zooms,
// or scrolls the rows over their names.
void TimelineView::HandleMouse(bool hovered) {
  ImGuiIO& io = ImGui::GetIO();
  if (hovered && io.MouseWheel != 0 && io.MousePos.x < axis.x0) {
    const long row = long(first_row) - long(io.MouseWheel * 3);
    first_row = std::size_t(std::max(0L, row));
  } else if (hovered && io.MouseWheel != 0) {
    axis.zoom(std::pow(1.25, io.MouseWheel), io.MousePos.x);
    follow = false;
  }
  if (ImGui::IsItemActive() && ImGui::IsMouseDragging(ImGuiMouseButton_Right)) {
    axis.pan(io.MouseDelta.x);
    follow = false;
  }
  if (ImGui::IsItemActivated() && ImGui::IsMouseClicked(ImGuiMouseButton_Left) && io.MousePos.x >= axis.x0)
    drag_from_ = axis.to_t(io.MousePos.x);
  if (drag_from_ && ImGui::IsItemActive() && ImGui::IsMouseDragging(ImGuiMouseButton_Left, 3.0f)) {
    const double to = axis.to_t(std::clamp(io.MousePos.x, axis.x0, axis.x0 + axis.width));
    selection = TimeRange{std::int64_t(std::min(*drag_from_, to)), std::int64_t(std::max(*drag_from_, to))};
  }
  if (drag_from_ && ImGui::IsMouseReleased(ImGuiMouseButton_Left)) {
    if (ImGui::GetMouseDragDelta(ImGuiMouseButton_Left, 3.0f).x == 0) selection.reset();  // a click
    drag_from_.reset();
  }
}

void TimelineView::DrawSelectedRange(ImVec2 top, float height) const {
  if (!selection) return;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float a = std::max(axis.x0, axis.to_x(double(selection->begin))),
              b = std::min(axis.x0 + axis.width, axis.to_x(double(selection->end)));
  if (b < a) return;
  dl->AddRectFilled(ImVec2(a, top.y), ImVec2(b, top.y + height), IM_COL32(120, 170, 255, 40));
  dl->AddLine(ImVec2(a, top.y), ImVec2(a, top.y + height), IM_COL32(120, 170, 255, 220), 1.5f);
  dl->AddLine(ImVec2(b, top.y), ImVec2(b, top.y + height), IM_COL32(120, 170, 255, 220), 1.5f);
}

// Below the lanes: the range, then the totals by name (left) and by kind (right).
void TimelineView::DrawSelectionTotals(const Frame& f, float height) {
  const TraceData& d = f.session.data();
  const std::array<std::int64_t, 4> key = {selection->begin, selection->end,
                                           std::int64_t(reinterpret_cast<std::intptr_t>(&d)),
                                           std::int64_t(d.events.size())};
  if (key != totals_key_) totals_ = selection_totals(d, *selection), totals_key_ = key;
  if (!ImGui::BeginChild("selection totals", ImVec2(0, height), true)) {
    ImGui::EndChild();
    return;
  }
  const double origin = AxisOrigin(f), len = double(selection->end - selection->begin);
  ImGui::Text("selected: %s to %s (%s) on %d ranks; %s: each span's time inside the range, share of the ranks' time",
              duration_text(double(selection->begin) - origin).c_str(),
              duration_text(double(selection->end) - origin).c_str(), duration_text(len).c_str(), totals_.ranks,
              figure_kind(d));
  ImGui::SameLine();
  if (ImGui::SmallButton("clear")) selection.reset();
  const float w = ImGui::GetContentRegionAvail().x;
  ImGui::BeginChild("by name", ImVec2(0.62f * w, 0), false);
  totals_table("by name table", totals_.by_name, true);
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("by kind", ImVec2(0, 0), false);
  totals_table("by kind table", totals_.by_kind, false);
  ImGui::EndChild();
  ImGui::EndChild();
}

}  // namespace dtl::viz
