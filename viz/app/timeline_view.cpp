// Timeline view (the Tracy model): a track per rank, stream and lane; spans colored by
// kind; runs narrower than a few pixels folded into one box that says how many events it
// holds; arrows from each send to its receive; idle gaps hatched; wheel to zoom, drag to
// pan, hover for details. Cost follows pixels: see visible_boxes() in viz/model/layout.
#include <cstdio>
#include <unordered_map>

#include "viz/app/views.h"

namespace dtl::viz {

namespace {

constexpr float kLabelWidth = 118, kRowHeight = 18, kMinBoxPx = 3;

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
    ImGui::Text("rank %d, %.3f us", e.rank, double(e.end_ns - e.begin_ns) / 1e3);
    if (e.bytes) ImGui::Text("%llu bytes", static_cast<unsigned long long>(e.bytes));
    if (e.peer >= 0) ImGui::Text("%s rank %d, tag %d", e.kind == EventKind::send ? "to" : "from", e.peer, e.tag);
    if (e.step >= 0) ImGui::Text("step %d", e.step);
    if (e.chunk >= 0) ImGui::Text("chunk %d (x%d)%s", e.chunk, e.chunk_count, (e.flags & kFlagReduce) ? ", reduced" : "");
    if (e.micro_batch >= 0) ImGui::Text("micro-batch %d", e.micro_batch);
  }
  ImGui::EndTooltip();
}

}  // namespace

void TimelineView::Draw(const Frame& f) {
  const TraceData& d = f.session.data();
  const auto& tracks = f.session.tracks();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float width = std::max(50.0f, avail.x - kLabelWidth);
  if (!fitted && d.t_end > d.t_begin) {
    const double pad = double(d.t_end - d.t_begin) * 0.02;
    axis = {double(d.t_begin) - pad, double(d.t_end) + pad, origin.x + kLabelWidth, width};
    if (start_zoom > 1) axis.zoom(start_zoom, axis.to_x(double(f.cursor_time())));
    fitted = true;
  }
  axis.x0 = origin.x + kLabelWidth;
  axis.width = width;

  // Legend and the measured idle fraction of every rank.
  legend_swatch(kind_color(EventKind::compute), "compute");
  legend_swatch(kind_color(EventKind::send), "send");
  legend_swatch(kind_color(EventKind::recv), "recv");
  legend_swatch(kind_color(EventKind::collective), "collective");
  legend_swatch(kind_color(EventKind::phase), "phase");
  legend_swatch(IM_COL32(200, 70, 70, 90), "idle");
  ImGui::Checkbox("arrows", &show_flows);
  double idle_sum = 0;
  for (int r = 0; r < d.ranks; ++r) idle_sum += f.session.busy().idle_fraction(r, std::int64_t(axis.t0), std::int64_t(axis.t1));
  ImGui::Text("idle (no compute or communication) in view, mean over ranks: %.1f%%   |   %.3f ms shown   |   wheel: zoom, drag: pan",
              d.ranks ? 100.0 * idle_sum / d.ranks : 0.0, (axis.t1 - axis.t0) / 1e6);

  const ImVec2 top = ImGui::GetCursorScreenPos();
  const float height = std::max(kRowHeight, avail.y - (top.y - origin.y));
  ImGui::InvisibleButton("timeline", ImVec2(avail.x, height));
  const bool hovered = ImGui::IsItemHovered();
  ImGuiIO& io = ImGui::GetIO();
  if (hovered && io.MouseWheel != 0) axis.zoom(std::pow(1.25, io.MouseWheel), io.MousePos.x);
  if (ImGui::IsItemActive() && ImGui::IsMouseDragging(ImGuiMouseButton_Left)) axis.pan(io.MouseDelta.x);

  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->PushClipRect(top, ImVec2(top.x + avail.x, top.y + height), true);
  std::unordered_map<std::uint64_t, ImVec2> send_at;  // flow id → where its send starts
  std::vector<std::pair<std::uint64_t, ImVec2>> recv_at;
  for (std::size_t i = 0; i < tracks.size(); ++i) {
    const Track& tr = tracks[i];
    const float y = top.y + float(i) * kRowHeight;
    if (y > top.y + height) break;
    if (i % 2 == 0) dl->AddRectFilled(ImVec2(top.x, y), ImVec2(top.x + avail.x, y + kRowHeight), IM_COL32(255, 255, 255, 10));
    char name[64];
    std::snprintf(name, sizeof name, "rank %d %s%s", tr.rank, tr.stream == kStreamMain ? "main" : "comm",
                  tr.lane ? (" #" + std::to_string(tr.lane + 1)).c_str() : "");
    dl->AddText(ImVec2(top.x + 4, y + 2), IM_COL32(220, 220, 225, 255), name);
    const std::vector<DrawBox> boxes = visible_boxes(d, tr, axis, kMinBoxPx);
    float last_x = axis.x0;
    for (const DrawBox& box : boxes) {
      const Event& e = d.events[box.event];
      // Idle: a gap on a rank's first main lane with nothing running (phases are containers).
      if (tr.stream == kStreamMain && tr.lane == 0 && e.kind != EventKind::phase && box.x0 - last_x > 2)
        dl->AddRectFilled(ImVec2(last_x, y + 3), ImVec2(box.x0, y + kRowHeight - 3), IM_COL32(200, 70, 70, 60));
      if (e.kind != EventKind::phase) last_x = std::max(last_x, box.x1);
      const ImU32 col = box.count > 1 ? IM_COL32(140, 140, 150, 255) : kind_color(e.kind);
      dl->AddRectFilled(ImVec2(box.x0, y + 2), ImVec2(std::max(box.x1, box.x0 + 1), y + kRowHeight - 2), col, 2.0f);
      if (box.x1 - box.x0 > 40) {
        char text[64];
        if (box.count > 1) std::snprintf(text, sizeof text, "%u events", box.count);
        else std::snprintf(text, sizeof text, "%s", d.label(e.label).empty() ? kind_text(e.kind) : d.label(e.label).c_str());
        dl->PushClipRect(ImVec2(box.x0, y), ImVec2(box.x1, y + kRowHeight), true);
        dl->AddText(ImVec2(box.x0 + 3, y + 2), IM_COL32(15, 15, 20, 255), text);
        dl->PopClipRect();
      }
      if (hovered && io.MousePos.y >= y && io.MousePos.y < y + kRowHeight && io.MousePos.x >= box.x0 &&
          io.MousePos.x <= std::max(box.x1, box.x0 + 2))
        tooltip(d, box);
      if (show_flows && box.count == 1 && e.flow_id) {
        if (e.kind == EventKind::send) send_at[e.flow_id] = ImVec2(box.x0, y + kRowHeight / 2);
        if (e.kind == EventKind::recv) recv_at.push_back({e.flow_id, ImVec2(box.x1, y + kRowHeight / 2)});
      }
    }
  }
  for (const auto& [id, to] : recv_at) {  // arrows: send start → receive end
    auto it = send_at.find(id);
    if (it == send_at.end()) continue;
    dl->AddLine(it->second, to, IM_COL32(230, 230, 240, 110), 1.0f);
    dl->AddTriangleFilled(ImVec2(to.x, to.y), ImVec2(to.x - 5, to.y - 3), ImVec2(to.x - 5, to.y + 3), IM_COL32(230, 230, 240, 160));
  }
  const float cx = axis.to_x(double(f.cursor_time()));  // the learner's current step
  dl->AddLine(ImVec2(cx, top.y), ImVec2(cx, top.y + height), IM_COL32(255, 220, 60, 200), 2.0f);
  dl->PopClipRect();
}

}  // namespace dtl::viz
