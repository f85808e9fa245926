// Timeline view (the Tracy model): a track per rank, stream and lane under a time axis;
// spans colored by kind (compute by what it is: forward, backward, optimizer), a layer's
// span on the lane under its forward or backward; runs narrower than a few pixels folded into one
// box that says how many events it holds; arrows from each send to its receive; idle gaps
// hatched; wheel to zoom, right-drag to pan, drag to select a range (timeline_select.cpp),
// hover for details. The 1-rank reference phase is
// hidden unless asked for. Cost follows pixels: see visible_boxes() in viz/model/layout.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "viz/app/views.h"
#include "viz/model/axes.h"
#include "viz/model/step_idle.h"

namespace dtl::viz {

namespace {

constexpr float kRowHeight = 18, kMinTickPx = 90;

// Compute spans by their label's first word: the lab's forward, backward and optimizer.
const ImU32 kForward = IM_COL32(110, 195, 105, 255), kBackward = IM_COL32(40, 125, 80, 255),
            kOptimizer = IM_COL32(190, 170, 60, 255), kRecompute = IM_COL32(150, 110, 200, 255);
// Checkpoints (viz/model/checkpoint_marks.h): a save that stops training, a rank's file written,
// a resumed run's read of its checkpoint.
const ImU32 kSave = IM_COL32(70, 150, 225, 255), kWrite = IM_COL32(130, 205, 235, 255),
            kResume = IM_COL32(230, 90, 200, 255);

ImU32 checkpoint_color(RunPart p) {
  return p == RunPart::checkpoint ? kSave : p == RunPart::checkpoint_write ? kWrite : kResume;
}

}  // namespace

void TimelineView::ColorLabels(const TraceData& d) {
  if (label_colors.size() == d.labels.size()) return;  // once per label table, not per box
  label_colors.assign(d.labels.size(), kind_color(EventKind::compute));
  checkpoint_labels.assign(d.labels.size(), false);
  training_labels = recompute_labels = false;
  for (std::size_t i = 0; i < d.labels.size(); ++i) {
    if (const RunPart part = d.role(std::uint16_t(i)).part; is_checkpoint_part(part)) {
      label_colors[i] = checkpoint_color(part), checkpoint_labels[i] = true;
      continue;
    }
    const Pass pass = d.role(std::uint16_t(i)).pass;  // a layer's, a block's, a pipeline action's
    if (pass == Pass::forward)
      label_colors[i] = kForward;
    else if (pass == Pass::backward || pass == Pass::weight)
      label_colors[i] = kBackward;
    else if (pass == Pass::optimizer)
      label_colors[i] = kOptimizer;
    else if (pass == Pass::recompute)
      label_colors[i] = kRecompute;  // a forward again, inside backward
    training_labels = training_labels || label_colors[i] != kind_color(EventKind::compute);
    recompute_labels = recompute_labels || pass == Pass::recompute;
  }
}

ImU32 TimelineView::span_color(const Event& e) const {
  const bool comm = e.kind == EventKind::send || e.kind == EventKind::recv || e.kind == EventKind::collective;
  if (comm && grouping.by_axis && e.axis != GroupAxis::none) return axis_color(e.axis);  // which group it moves in
  if (e.kind == EventKind::phase && e.label < checkpoint_labels.size() && checkpoint_labels[e.label])
    return label_colors[e.label];
  if (e.kind != EventKind::compute) return kind_color(e.kind);
  return e.label < label_colors.size() ? label_colors[e.label] : kind_color(e.kind);
}

void TimelineView::ShowRange(double t0, double t1) {
  const double b = axis.compress(t0), e = axis.compress(t1), pad = (e - b) * 0.02 + 1;
  axis.t0 = axis.expand(b - pad);
  axis.t1 = axis.expand(e + pad);
}

void TimelineView::Fit(const Frame& f, float x0, float width) {
  const TraceData& d = f.session.data();
  axis.x0 = x0;
  axis.width = width;
  if ((fitted && !follow) || d.t_end <= d.t_begin) return;
  if (!fitted && !f.session.live() && start_zoom <= 1) {  // a replay opens on one timed step
    if (const std::optional<TimeRange>& step = f.session.index().first_step) {
      ShowRange(double(step->begin), double(step->end));
      fitted = true, follow = false, one_step = true;
      return;
    }
  }
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
    if (recompute_labels) legend_swatch(kRecompute, "recompute");
  }
  legend_swatch(kind_color(EventKind::compute), "compute");
  legend_swatch(kind_color(EventKind::send), "send");
  legend_swatch(kind_color(EventKind::recv), "recv");
  legend_swatch(kind_color(EventKind::collective), grouping.by_axis ? "collective (world)" : "collective");
  if (grouping.by_axis) {
    legend_swatch(axis_color(GroupAxis::dp), "dp comm");
    legend_swatch(axis_color(GroupAxis::tp), "tp comm");
    legend_swatch(axis_color(GroupAxis::pp), "pp comm");
  }
  legend_swatch(kind_color(EventKind::phase), "phase");
  legend_swatch(IM_COL32(200, 70, 70, 90), "idle");
  ImGui::Checkbox("arrows", &show_flows);
  if (const std::optional<TimeRange>& step = f.session.index().first_step; step && !f.session.live()) {
    ImGui::SameLine();
    if (ImGui::SmallButton(one_step ? "show the whole run" : "show one timed step")) {
      one_step = !one_step;
      if (one_step)
        ShowRange(double(step->begin), double(step->end)), follow = false;
      else
        follow = true;  // refit the run
    }
  }

  if (f.session.index().reference) {
    ImGui::SameLine();
    if (ImGui::Checkbox("1-rank reference", &show_reference)) follow = true;  // refit with or without it
  }
  if (!grid_.empty()) {  // a grid run: lanes by (pp, dp, tp), stage × replica groups folded
    ImGui::Checkbox("group by axis", &grouping.by_axis);
    if (grouping.by_axis) {
      ImGui::SameLine();
      if (ImGui::Checkbox("fold groups", &grouping.fold_default)) grouping.toggled.clear();
    }
    ImGui::SameLine(0, 20);
  }
  // One idle (viz/model/step_idle.h): no compute on the rank, whatever its communication does.
  const double idle = mean_idle(f.session.busy(), d.ranks, {std::int64_t(axis.t0), std::int64_t(axis.t1)});
  const double shown = axis.compress(axis.t1) - axis.compress(axis.t0);
  ImGui::Text("idle in view (%s: no compute on the rank), mean over ranks: %.1f%%  |  %s shown, 0 = %s", figure_kind(d),
              100.0 * idle, format_duration(shown, shown / 100, shown).c_str(), OriginText(f));
  ImGui::SameLine();
  ImGui::TextDisabled("|  wheel: zoom, drag: select a range, right-drag: pan");
}

double TimelineView::AxisOrigin(const Frame& f) const {
  return time_origin ? *time_origin : double(shown_range(f.session.data(), f.session.index(), false).begin);
}

// What the axis counts from: time_origin when given, else the run's start.
const char* TimelineView::OriginText(const Frame& f) const {
  if (time_origin) return "the start of the timed step";
  const auto& ref = f.session.index().reference;
  const bool ref_first =  // the grid lab checks after the run
      ref && shown_range(f.session.data(), f.session.index(), false).begin >= ref->end;
  return !ref        ? "the trace's start"
         : ref_first ? "the run's start, after the 1-rank reference"
                     : "the run's start (the 1-rank reference after it hidden)";
}

// The time axis: ticks labelled from the run's start (after any reference phase), and
// faint grid lines down through the lanes.
void TimelineView::DrawAxis(const Frame& f, ImVec2 top, float height) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const double origin = axis.compress(AxisOrigin(f));
  const float line = ImGui::GetTextLineHeight();
  dl->AddLine(ImVec2(axis.x0, top.y + line + 3), ImVec2(axis.x0 + axis.width, top.y + line + 3),
              IM_COL32(150, 150, 160, 200));
  // Ticks count the run's own time: the picture's (compressed) time, waits left out.
  for (const Tick& t : time_ticks(axis.compress(axis.t0), axis.compress(axis.t1), origin, axis.width, kMinTickPx)) {
    const float x = axis.from_compressed(t.value);
    dl->AddLine(ImVec2(x, top.y + line), ImVec2(x, top.y + line + 6), IM_COL32(200, 200, 210, 255));
    dl->AddLine(ImVec2(x, top.y + line + 6), ImVec2(x, top.y + height), IM_COL32(255, 255, 255, 18));
    dl->AddText(ImVec2(x - ImGui::CalcTextSize(t.label.c_str()).x / 2, top.y), IM_COL32(200, 200, 210, 255),
                t.label.c_str());
  }
}

// Rank 0's phases as a labelled strip over the lanes: which variant, stage or schedule the
// spans below belong to ("naive", "bucketed", "ZeRO-2", "1f1b", "tp+sp"). Returns its height.
float TimelineView::DrawPhaseStrip(const Frame& f, ImVec2 top) {
  const TraceData& d = f.session.data();
  const std::vector<std::uint32_t>& phases = f.session.index().rank0_phases;  // by begin
  if (phases.empty()) return 0;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float h = ImGui::GetTextLineHeight() + 4;
  float last_x = -1e9f;  // a phase narrower than a few pixels after another is not drawn (cost follows pixels)
  for (std::size_t k = 0; k < phases.size(); ++k) {
    const Event& e = d.events[phases[k]];
    if (double(e.begin_ns) > axis.t1) break;
    const float a = std::max(axis.x0, axis.to_x(double(e.begin_ns))),
                b = std::min(axis.x0 + axis.width, axis.to_x(double(e.end_ns)));
    if (b <= a || (b - a < 3 && a - last_x < 3)) continue;
    last_x = b;
    dl->AddRectFilled(ImVec2(a, top.y), ImVec2(b, top.y + h - 2),
                      k % 2 ? IM_COL32(70, 72, 86, 255) : IM_COL32(56, 58, 70, 255), 3.0f);
    if (b - a < 12) continue;
    const std::string name = d.label(e.label), why = role_purpose(d.role(e));
    const std::string text = why.empty() ? name : name + " (" + why + ")";
    dl->PushClipRect(ImVec2(a, top.y), ImVec2(b, top.y + h), true);
    dl->AddText(ImVec2(a + 4, top.y + 1), IM_COL32(225, 225, 232, 255), text.c_str());
    dl->PopClipRect();
  }
  dl->AddText(ImVec2(top.x + 10, top.y + 1), IM_COL32(170, 170, 180, 255), "rank 0's phases");
  return h + 2;
}

// Rank 0's checkpoint marks over every lane: a save's band (training stopped), its file's write as
// a bar along the top (beside the next step when asynchronous: the overlap the save buys), and
// a resumed run's read of its checkpoint, ending in the line where training resumed.
void TimelineView::DrawCheckpointMarks(const Frame& f, ImVec2 top, float height) const {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float line = ImGui::GetTextLineHeight();
  float text_end = -1e9f;  // a label starts past the one before it
  for (const CheckpointMark& m : f.session.index().checkpoints) {
    if (double(m.end_ns) < axis.t0 || double(m.begin_ns) > axis.t1) continue;
    const float right = axis.x0 + axis.width;
    const float a = std::clamp(axis.to_x(double(m.begin_ns)), axis.x0, right),
                b = std::clamp(std::max(a + 2, axis.to_x(double(m.end_ns))), axis.x0, right);
    std::string text;
    if (m.kind == CheckpointMarkKind::save) {
      dl->AddRectFilled(ImVec2(a, top.y), ImVec2(b, top.y + height), (kSave & 0x00ffffffu) | (60u << 24));
      dl->AddRect(ImVec2(a, top.y), ImVec2(b, top.y + height), kSave);
      text = "save, step " + std::to_string(m.step);
    } else if (m.kind == CheckpointMarkKind::write) {
      dl->AddRectFilled(ImVec2(a, top.y + line + 2), ImVec2(b, top.y + line + 6), kWrite);
      if (m.beside_training_ns > 0) text = "write beside training";
    } else {
      dl->AddRectFilled(ImVec2(a, top.y), ImVec2(b, top.y + height), (kResume & 0x00ffffffu) | (50u << 24));
      dl->AddLine(ImVec2(b, top.y), ImVec2(b, top.y + height), kResume, 2.0f);
      text = "resumed from step " + std::to_string(m.step);
    }
    const float y = top.y + (m.kind == CheckpointMarkKind::write ? line + 7 : 1);
    const float x = m.kind == CheckpointMarkKind::resume ? b + 3 : a + 2;
    if (text.empty() || x < text_end) continue;
    dl->AddText(ImVec2(x, y),
                checkpoint_color(m.kind == CheckpointMarkKind::save    ? RunPart::checkpoint
                                 : m.kind == CheckpointMarkKind::write ? RunPart::checkpoint_write
                                                                       : RunPart::resume),
                text.c_str());
    text_end = x + ImGui::CalcTextSize(text.c_str()).x + 6;
  }
}

void TimelineView::Draw(const Frame& f) {
  names_w_ = 0;
  for (const std::string& n : f.session.index().rank_names)
    names_w_ = std::max(names_w_, ImGui::CalcTextSize((n + " main: layers").c_str()).x + 16);
  names_w_ = std::min(names_w_, 0.4f * ImGui::GetContentRegionAvail().x);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  GroupLanes(f);
  Fit(f, origin.x + LabelWidth(), std::max(50.0f, avail.x - LabelWidth()));
  ColorLabels(f.session.data());
  DrawHeader(f);

  StartSelection(f);
  const ImVec2 top = ImGui::GetCursorScreenPos();
  const float totals_h = selection ? std::min(240.0f, 0.4f * avail.y) : 0;  // the selection's totals below
  const float height = std::max(kRowHeight, avail.y - (top.y - origin.y) - totals_h);
  ImGui::InvisibleButton("timeline", ImVec2(avail.x, height),
                         ImGuiButtonFlags_MouseButtonLeft | ImGuiButtonFlags_MouseButtonRight);
  const bool hovered = ImGui::IsItemHovered();
  HandleMouse(hovered);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->PushClipRect(top, ImVec2(top.x + avail.x, top.y + height), true);
  DrawAxis(f, top, height);
  float axis_h = ImGui::GetTextLineHeight() + 10;
  axis_h += DrawPhaseStrip(f, ImVec2(top.x, top.y + axis_h));
  DrawLanes(f, ImVec2(top.x, top.y + axis_h), ImVec2(avail.x, height - axis_h), hovered);
  DrawCheckpointMarks(f, ImVec2(top.x + LabelWidth(), top.y + axis_h), height - axis_h);
  const float cx = axis.to_x(double(f.cursor_time()));  // the learner's current step
  dl->AddLine(ImVec2(cx, top.y + axis_h), ImVec2(cx, top.y + height), IM_COL32(255, 220, 60, 200), 2.0f);
  DrawSelectedRange(ImVec2(top.x, top.y + axis_h), height - axis_h);
  dl->PopClipRect();
  if (selection) DrawSelectionTotals(f, totals_h);
}

}  // namespace dtl::viz
