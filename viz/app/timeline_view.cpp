// Timeline view (the Tracy model): a track per rank, stream and lane under a time axis;
// spans colored by kind (compute by what it is: forward, backward, optimizer), a layer's
// span on the lane under its forward or backward; runs narrower than a few pixels folded into one
// box that says how many events it holds; arrows from each send to its receive; idle gaps
// hatched; wheel to zoom, drag to pan, hover for details. The 1-rank reference phase is
// hidden unless asked for. Cost follows pixels: see visible_boxes() in viz/model/layout.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "viz/app/views.h"
#include "viz/model/axes.h"

namespace dtl::viz {

namespace {

constexpr float kLabelWidth = 118, kRowHeight = 18, kMinBoxPx = 3, kMinTickPx = 90;

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

// Compute spans by their label's first word: the lab's forward, backward and optimizer.
const ImU32 kForward = IM_COL32(110, 195, 105, 255), kBackward = IM_COL32(40, 125, 80, 255),
            kOptimizer = IM_COL32(190, 170, 60, 255);

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
    if (e.axis != GroupAxis::none || e.group_rank >= 0) ImGui::Text("%s group, rank %d in it", group_axis_name(e.axis), e.group_rank);
    if (e.step >= 0) ImGui::Text("step %d", e.step);
    if (e.chunk >= 0) ImGui::Text("chunk %d (x%d)%s", e.chunk, e.chunk_count, (e.flags & kFlagReduce) ? ", reduced" : "");
    if (e.micro_batch >= 0) ImGui::Text("micro-batch %d", e.micro_batch);
  }
  ImGui::EndTooltip();
}

ImU32 dimmed(ImU32 c) { return (c & 0x00ffffffu) | (IM_COL32(0, 0, 0, 80) & 0xff000000u); }

}  // namespace

void TimelineView::ColorLabels(const TraceData& d) {
  if (label_colors.size() == d.labels.size()) return;  // once per label table, not per box
  label_colors.assign(d.labels.size(), kind_color(EventKind::compute));
  training_labels = false;
  for (std::size_t i = 0; i < d.labels.size(); ++i) {
    const std::string& l = d.labels[i];
    if (l.rfind("forward", 0) == 0 || l.rfind("fwd ", 0) == 0) label_colors[i] = kForward;  // "fwd block 1": tensor parallel
    else if (l.rfind("backward", 0) == 0 || l.rfind("bwd ", 0) == 0) label_colors[i] = kBackward;
    else if (l.rfind("optimizer", 0) == 0) label_colors[i] = kOptimizer;
    training_labels = training_labels || label_colors[i] != kind_color(EventKind::compute);
  }
}

ImU32 TimelineView::span_color(const Event& e) const {
  if (e.kind != EventKind::compute) return kind_color(e.kind);
  return e.label < label_colors.size() ? label_colors[e.label] : kind_color(e.kind);
}

void TimelineView::Fit(const Frame& f, float x0, float width) {
  const TraceData& d = f.session.data();
  axis.x0 = x0;
  axis.width = width;
  axis.cuts = f.session.cuts().empty() ? nullptr : &f.session.cuts();  // the session's: set every frame
  if ((fitted && !follow) || d.t_end <= d.t_begin) return;
  const TimeRange r = shown_range(d, f.session.index(), show_reference);
  const double b = axis.compress(double(r.begin)), e = axis.compress(double(r.end)), pad = (e - b) * 0.02 + 1;
  axis.t0 = axis.expand(b - pad);
  axis.t1 = axis.expand(e + pad);
  if (!fitted && start_zoom > 1) {
    axis.zoom(start_zoom, axis.to_x(double(f.cursor_time())));
    follow = false;
  }
  fitted = true;
}

// Legend, toggles and the measured idle fraction of every rank.
void TimelineView::DrawHeader(const Frame& f) {
  const TraceData& d = f.session.data();
  if (training_labels) {
    legend_swatch(kForward, "forward");
    legend_swatch(kBackward, "backward");
    legend_swatch(kOptimizer, "optimizer");
  }
  legend_swatch(kind_color(EventKind::compute), "compute");
  legend_swatch(kind_color(EventKind::send), "send");
  legend_swatch(kind_color(EventKind::recv), "recv");
  legend_swatch(kind_color(EventKind::collective), "collective");
  legend_swatch(kind_color(EventKind::phase), "phase");
  legend_swatch(IM_COL32(200, 70, 70, 90), "idle");
  ImGui::Checkbox("arrows", &show_flows);
  if (f.session.index().reference) {
    ImGui::SameLine();
    if (ImGui::Checkbox("1-rank reference", &show_reference)) follow = true;  // refit with or without it
  }
  double idle_sum = 0;
  for (int r = 0; r < d.ranks; ++r) idle_sum += f.session.busy().idle_fraction(r, std::int64_t(axis.t0), std::int64_t(axis.t1));
  const double shown = axis.compress(axis.t1) - axis.compress(axis.t0);
  ImGui::Text("idle in view, mean over ranks: %.1f%%  |  %s shown, 0 = %s%s  |  wheel: zoom, drag: pan",
              d.ranks ? 100.0 * idle_sum / d.ranks : 0.0, format_duration(shown, shown / 100, shown).c_str(),
              f.session.index().reference ? "the run's start, after the 1-rank reference" : "the trace's start",
              axis.cuts ? "; waits for you to step cut out (dashed)" : "");
}

// The time axis: ticks labelled from the run's start (after any reference phase), and
// faint grid lines down through the lanes.
void TimelineView::DrawAxis(const Frame& f, ImVec2 top, float height) {
  const TraceData& d = f.session.data();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const double origin = axis.compress(double(shown_range(d, f.session.index(), false).begin));
  const float line = ImGui::GetTextLineHeight();
  dl->AddLine(ImVec2(axis.x0, top.y + line + 3), ImVec2(axis.x0 + axis.width, top.y + line + 3), IM_COL32(150, 150, 160, 200));
  // Ticks count the run's own time: the picture's (compressed) time, waits left out.
  for (const Tick& t : time_ticks(axis.compress(axis.t0), axis.compress(axis.t1), origin, axis.width, kMinTickPx)) {
    const float x = axis.from_compressed(t.value);
    dl->AddLine(ImVec2(x, top.y + line), ImVec2(x, top.y + line + 6), IM_COL32(200, 200, 210, 255));
    dl->AddLine(ImVec2(x, top.y + line + 6), ImVec2(x, top.y + height), IM_COL32(255, 255, 255, 18));
    dl->AddText(ImVec2(x - ImGui::CalcTextSize(t.label.c_str()).x / 2, top.y), IM_COL32(200, 200, 210, 255), t.label.c_str());
  }
}

// Each wait for the learner, cut out of the picture: a dashed line where it was.
void TimelineView::DrawBreaks(ImVec2 top, float height, bool hovered) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImGuiIO& io = ImGui::GetIO();
  const auto& cuts = axis.cuts->ranges();
  auto it = std::upper_bound(cuts.begin(), cuts.end(), axis.t0, [](double t, const TimeRange& c) { return t < double(c.end); });
  float last = -1e9f;
  for (; it != cuts.end() && double(it->begin) <= axis.t1; ++it) {
    const float x = axis.to_x(double(it->begin));
    if (x - last < 4) continue;  // one line per few pixels
    last = x;
    for (float y = top.y; y < top.y + height; y += 8) dl->AddLine(ImVec2(x, y), ImVec2(x, y + 4), IM_COL32(170, 170, 190, 110));
    if (hovered && std::fabs(io.MousePos.x - x) < 3) {
      const double waited = double(it->end - it->begin);
      ImGui::SetTooltip("the run waited %s here for you to step (cut out of the time axis)", format_duration(waited, waited / 100, waited).c_str());
    }
  }
}

void TimelineView::DrawLanes(const Frame& f, ImVec2 top, ImVec2 size, bool hovered) {
  const TraceData& d = f.session.data();
  const auto& tracks = f.session.tracks();
  const ImGuiIO& io = ImGui::GetIO();
  const std::int64_t now = f.cursor_time();
  const bool dim_future = !f.session.live() && f.cursor < f.session.steps().size();  // replay: what is still to come
  ImDrawList* dl = ImGui::GetWindowDrawList();
  std::unordered_map<std::uint64_t, ImVec2> send_at;  // flow id → where its send starts
  std::vector<std::pair<std::uint64_t, ImVec2>> recv_at;
  for (std::size_t i = 0; i < tracks.size(); ++i) {
    const Track& tr = tracks[i];
    const float y = top.y + float(i) * kRowHeight;
    if (y > top.y + size.y) break;
    if (i % 2 == 0) dl->AddRectFilled(ImVec2(top.x, y), ImVec2(top.x + size.x, y + kRowHeight), IM_COL32(255, 255, 255, 10));
    char name[64];
    std::snprintf(name, sizeof name, "rank %d %s%s", tr.rank, tr.stream == kStreamMain ? "main" : "comm",
                  tr.lane ? (" #" + std::to_string(tr.lane + 1)).c_str() : "");
    dl->AddRectFilled(ImVec2(top.x + 3, y + 4), ImVec2(top.x + 7, y + kRowHeight - 4), rank_color(tr.rank));  // the rank's own color
    dl->AddText(ImVec2(top.x + 10, y + 2), IM_COL32(220, 220, 225, 255), name);
    float last_x = axis.x0;
    for (const DrawBox& box : visible_boxes(d, tr, axis, kMinBoxPx)) {
      const Event& e = d.events[box.event];
      // Idle: a gap on a rank's first main lane with nothing running (phases are containers).
      if (tr.stream == kStreamMain && tr.lane == 0 && e.kind != EventKind::phase && box.x0 - last_x > 2)
        dl->AddRectFilled(ImVec2(last_x, y + 3), ImVec2(box.x0, y + kRowHeight - 3), IM_COL32(200, 70, 70, 60));
      if (e.kind != EventKind::phase) last_x = std::max(last_x, box.x1);
      ImU32 col = box.count > 1 ? IM_COL32(140, 140, 150, 255) : span_color(e);
      if (dim_future && e.begin_ns > now) col = dimmed(col);
      const ImVec2 a(box.x0, y + 2), b(std::max(box.x1, box.x0 + 1), y + kRowHeight - 2);
      dl->AddRectFilled(a, b, col, 2.0f);
      if (box.x1 - box.x0 > 5) dl->AddRect(a, b, IM_COL32(10, 10, 14, 160), 2.0f);  // neighbouring layers stay apart
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
}

void TimelineView::Draw(const Frame& f) {
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  Fit(f, origin.x + kLabelWidth, std::max(50.0f, avail.x - kLabelWidth));
  ColorLabels(f.session.data());
  DrawHeader(f);

  const ImVec2 top = ImGui::GetCursorScreenPos();
  const float height = std::max(kRowHeight, avail.y - (top.y - origin.y));
  ImGui::InvisibleButton("timeline", ImVec2(avail.x, height));
  const bool hovered = ImGui::IsItemHovered();
  ImGuiIO& io = ImGui::GetIO();
  if (hovered && io.MouseWheel != 0) {
    axis.zoom(std::pow(1.25, io.MouseWheel), io.MousePos.x);
    follow = false;
  }
  if (ImGui::IsItemActive() && ImGui::IsMouseDragging(ImGuiMouseButton_Left)) {
    axis.pan(io.MouseDelta.x);
    follow = false;
  }
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->PushClipRect(top, ImVec2(top.x + avail.x, top.y + height), true);
  DrawAxis(f, top, height);
  if (axis.cuts) DrawBreaks(top, height, hovered);
  const float axis_h = ImGui::GetTextLineHeight() + 10;
  DrawLanes(f, ImVec2(top.x, top.y + axis_h), ImVec2(avail.x, height - axis_h), hovered);
  const float cx = axis.to_x(double(f.cursor_time()));  // the learner's current step
  dl->AddLine(ImVec2(cx, top.y + axis_h), ImVec2(cx, top.y + height), IM_COL32(255, 220, 60, 200), 2.0f);
  dl->PopClipRect();
}

}  // namespace dtl::viz
