// Colors: one hue per event kind and per memory tag, chosen to stay apart for common
// color-vision deficiencies (blue/orange for send/recv, never red against green).
#include <algorithm>
#include <cstdio>

#include "viz/app/views.h"

namespace dtl::viz {

ImU32 kind_color(EventKind k) {
  switch (k) {
    case EventKind::compute: return IM_COL32(120, 138, 158, 255);    // slate (forward, backward: greens)
    case EventKind::send: return IM_COL32(60, 120, 220, 255);        // blue
    case EventKind::recv: return IM_COL32(240, 150, 40, 255);        // orange
    case EventKind::collective: return IM_COL32(150, 90, 200, 255);  // purple
    case EventKind::phase: return IM_COL32(110, 110, 120, 160);      // gray, translucent
    default: return IM_COL32(200, 200, 200, 255);
  }
}

// Apart from the kinds' hues (send blue, receive orange, collective purple) and the
// cursor's yellow and the optimizer's olive: cyan, magenta, coral.
ImU32 axis_color(GroupAxis a) {
  switch (a) {
    case GroupAxis::dp: return IM_COL32(70, 200, 235, 255);
    case GroupAxis::tp: return IM_COL32(230, 80, 175, 255);
    case GroupAxis::pp: return IM_COL32(255, 115, 85, 255);
    case GroupAxis::none: break;
  }
  return IM_COL32(200, 200, 200, 255);
}

ImU32 tag_color(int tag) {
  static const ImU32 colors[] = {IM_COL32(60, 120, 220, 255), IM_COL32(240, 150, 40, 255), IM_COL32(150, 90, 200, 255),
                                 IM_COL32(80, 170, 90, 255),  IM_COL32(90, 200, 210, 255), IM_COL32(160, 160, 160, 255),
                                 IM_COL32(200, 80, 150, 255), IM_COL32(230, 210, 60, 255),  // master, gather
                                 IM_COL32(120, 100, 70, 255)};                              // data
  return colors[std::clamp(tag, 0, int(std::size(colors)) - 1)];
}

// Tableau 10 without its yellow (the cursor's) and grey (what every rank holds); repeats after 8.
ImU32 rank_color(int rank) {
  static const ImU32 colors[] = {IM_COL32(78, 121, 167, 255),  IM_COL32(242, 142, 43, 255),
                                 IM_COL32(118, 183, 178, 255), IM_COL32(225, 87, 89, 255),
                                 IM_COL32(89, 161, 79, 255),   IM_COL32(176, 122, 161, 255),
                                 IM_COL32(255, 157, 167, 255), IM_COL32(156, 117, 95, 255)};
  return colors[std::size_t(std::max(rank, 0)) % std::size(colors)];
}

ImU32 contribution_color(int count, int ranks) {
  const float f = ranks <= 1 ? 1.0f : float(count - 1) / float(ranks - 1);  // 0: own data only, 1: complete
  const int r = int(225 - 190 * f), g = int(240 - 110 * f), b = int(225 - 175 * f);
  return IM_COL32(r, g, b, 255);
}

void legend_swatch(ImU32 color, const char* text) {
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const float h = ImGui::GetTextLineHeight();
  ImGui::GetWindowDrawList()->AddRectFilled(p, ImVec2(p.x + h, p.y + h), color, 2.0f);
  ImGui::Dummy(ImVec2(h, h));
  ImGui::SameLine();
  ImGui::TextUnformatted(text);
  ImGui::SameLine(0, 14);
}

std::string human_bytes(double b) {
  char buf[32];
  if (b >= double(1 << 30))
    std::snprintf(buf, sizeof buf, "%.1f GiB", b / double(1 << 30));
  else if (b >= double(1 << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / double(1 << 20));
  else if (b >= double(1 << 10))
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / double(1 << 10));
  else
    std::snprintf(buf, sizeof buf, "%.0f B", b);
  return buf;
}

std::int64_t Frame::cursor_time() const {
  const auto& tr = session.steps();
  if (tr.empty()) return session.data().t_begin;
  if (cursor == 0) return tr.front().begin_ns;  // before the first step: as it begins (buffers allocated)
  return tr[std::min(cursor, tr.size()) - 1].end_ns;
}

}  // namespace dtl::viz
