// Memory view: per-rank stacked bars by tag (param, grad, optimizer, activation, comm,
// other) at the cursor's time on a labelled byte axis, a peak marker per rank, and the
// lab's formula as a line with its value beside it (DDP: 16 B/param x parameters; the
// layout math is viz/model/memory_model and axes).
#include <cstdio>

#include "viz/app/views.h"
#include "viz/model/axes.h"
#include "viz/model/memory_model.h"

namespace dtl::viz {

namespace {

constexpr float kAxisWidth = 70;

// The formula's line across the bars, and beside its end (in the gutter right of the
// bars, so it hides no bar) its value and how the lab got it.
void draw_formula(ImDrawList* dl, const MemoryPicture& pic, ImVec2 o, float w, float h, double top) {
  const float fy = o.y + h - h * float(pic.formula / top), line = ImGui::GetTextLineHeight();
  const ImU32 yellow = IM_COL32(255, 220, 60, 230);
  dl->AddLine(ImVec2(o.x, fy), ImVec2(o.x + w + 6, fy), yellow, 2.0f);
  const std::string value = "formula: " + format_bytes(pic.formula, pic.formula);
  dl->AddText(ImVec2(o.x + w + 10, fy - line - 1), yellow, value.c_str());
  if (!pic.formula_text.empty()) dl->AddText(ImVec2(o.x + w + 10, fy + 2), yellow, pic.formula_text.c_str());
}

// The byte axis on the left: tick labels and faint lines across the bars.
void draw_axis(ImDrawList* dl, const ByteScale& scale, ImVec2 o, float w, float h) {
  for (const Tick& t : scale.ticks) {
    const float y = o.y + h - h * float(t.value / scale.top);
    dl->AddLine(ImVec2(o.x - 4, y), ImVec2(o.x + w, y), IM_COL32(255, 255, 255, t.value == 0 ? 120 : 25));
    const ImVec2 size = ImGui::CalcTextSize(t.label.c_str());
    dl->AddText(ImVec2(o.x - 8 - size.x, y - size.y / 2), IM_COL32(200, 200, 210, 255), t.label.c_str());
  }
}

}  // namespace

void MemoryView::Draw(const Frame& f) {
  const TraceData& d = f.session.data();
  const int P = d.ranks;
  if (d.memory.empty() || P < 1) {
    ImGui::TextWrapped("No memory events in this run yet (labs allocate through MemoryTracker; each allocation shows here).");
    return;
  }
  const MemoryPicture pic = memory_at(d, f.cursor_time());
  for (int tag = 0; tag < kNumMemTags; ++tag) legend_swatch(tag_color(tag), mem_tag_name(MemTag(tag)));
  ImGui::NewLine();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  ImGui::Dummy(ImVec2(1, 8));  // room for the top tick's label
  const ImVec2 start = ImGui::GetCursorScreenPos(), avail = ImGui::GetContentRegionAvail();
  const float line = ImGui::GetTextLineHeight();
  const float gutter = pic.formula > 0 ? std::min(avail.x * 0.35f, 10 + ImGui::CalcTextSize(pic.formula_text.empty() ? "formula: 999.999 MiB" : pic.formula_text.c_str()).x) : 0;
  const float h = std::max(40.0f, avail.y - 2 * (line + 4)), w = std::max(40.0f, avail.x - kAxisWidth - gutter - 4);
  const ImVec2 o(start.x + kAxisWidth, start.y);  // the bars' area: [o.x, o.x + w] x [o.y, o.y + h]
  const ByteScale scale = byte_scale(pic.largest(), std::max(2, int(h / (2.5f * line))));
  draw_axis(dl, scale, o, w, h);
  const float slot = w / float(P), bar = std::clamp(slot * 0.6f, 3.0f, 60.0f);
  for (int r = 0; r < P; ++r) {
    const float x = o.x + slot * (float(r) + 0.5f) - bar / 2;
    float y = o.y + h;
    for (int tag = 0; tag < kNumMemTags; ++tag) {
      const float bh = h * float(double(pic.now[std::size_t(r)].bytes[std::size_t(tag)]) / scale.top);
      if (bh <= 0) continue;
      dl->AddRectFilled(ImVec2(x, y - bh), ImVec2(x + bar, y), tag_color(tag));
      y -= bh;
    }
    const float py = o.y + h - h * float(double(pic.peak[std::size_t(r)]) / scale.top);
    dl->AddLine(ImVec2(x - 3, py), ImVec2(x + bar + 3, py), IM_COL32(255, 255, 255, 220), 2.0f);  // peak
    if (slot > 26 || r % std::max(1, P / 16) == 0) {
      char label[24];
      std::snprintf(label, sizeof label, "rank %d", r);
      const float lw = ImGui::CalcTextSize(label).x;
      dl->AddText(ImVec2(x + bar / 2 - (slot > lw + 4 ? lw / 2 : 0), o.y + h + 2), IM_COL32(210, 210, 215, 255), slot > lw + 4 ? label : label + 5);
    }
  }
  if (pic.formula > 0) draw_formula(dl, pic, o, w, h, scale.top);
  ImGui::SetCursorScreenPos(ImVec2(start.x, o.y + h + line + 6));
  ImGui::Text("bars: memory at the cursor; white: each rank's peak (largest %s)%s", human_bytes(pic.largest()).c_str(),
              pic.formula > 0 ? "; yellow: the formula per rank" : "");
}

}  // namespace dtl::viz
