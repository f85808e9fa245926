// Memory view: per-rank stacked bars by tag (param, grad, optimizer, activation, comm,
// other, master, gather) at the cursor's time on a labelled byte axis, a peak marker per
// rank, and the lab's formula as a line with its value beside it (DDP: 16 B/param x
// parameters). A run of several phases with a formula each (ZeRO's --stage all) shows,
// by default, one small picture per phase instead: each rank's bytes at its peak inside
// the phase, all on one byte axis, so ZeRO-0 → ZeRO-3 shrinking is seen at a glance.
// The layout math is viz/model/memory_model and axes.
#include <algorithm>
#include <cstdio>
#include <string_view>

#include "viz/app/views.h"
#include "viz/model/axes.h"
#include "viz/model/memory_model.h"
#include "viz/model/text_fit.h"

namespace dtl::viz {

namespace {

// Bars stack the model state first (what the formulas count: parameters, gradients, fp32
// master, m and v), then what they leave out (gather and reduce buffers, activations,
// workspace), so the formula's line meets the model state's top. Tags keep their numbers.
constexpr MemTag kStackOrder[kNumMemTags] = {MemTag::param,      MemTag::grad,   MemTag::master,
                                             MemTag::optimizer,  MemTag::gather, MemTag::comm,
                                             MemTag::activation, MemTag::data,   MemTag::other};

constexpr float kAxisWidth = 70, kMinPanelWidth = 150;

// The formula's text as the font can draw it: the default font has Latin-1 only, so the
// Greek Ψ of ZeRO's formulas is spelled out (it would show as '?'); clipped (text_fit.h).
std::string drawable(std::string_view text);

// The formula's line across the bars, and beside its end (in the gutter right of the
// bars, so it hides no bar) its value and how the lab got it.
void draw_formula(ImDrawList* dl, const MemoryPicture& pic, ImVec2 o, float w, float h, double top) {
  const float fy = o.y + h - h * float(pic.formula / top), line = ImGui::GetTextLineHeight();
  const ImU32 yellow = IM_COL32(255, 220, 60, 230);
  dl->AddLine(ImVec2(o.x, fy), ImVec2(o.x + w + 6, fy), yellow, 2.0f);
  const std::string value = "formula: " + format_bytes(pic.formula, pic.formula);
  dl->AddText(ImVec2(o.x + w + 10, fy - line - 1), yellow, value.c_str());
  if (!pic.formula_text.empty()) dl->AddText(ImVec2(o.x + w + 10, fy + 2), yellow, drawable(pic.formula_text).c_str());
}

// Each rank's own formula (ranks that differ: a pipeline's stages), a yellow tick over its
// bar, and how the lab got them beside the bars.
void draw_rank_formulas(ImDrawList* dl, const MemoryPicture& pic, ImVec2 o, float w, float h, double top) {
  const ImU32 yellow = IM_COL32(255, 220, 60, 230);
  const float slot = w / float(pic.formula_of_rank.size()), bar = std::clamp(slot * 0.6f, 3.0f, 60.0f);
  for (std::size_t r = 0; r < pic.formula_of_rank.size(); ++r) {
    if (pic.formula_of_rank[r] <= 0) continue;
    const float x = o.x + slot * (float(r) + 0.5f), fy = o.y + h - h * float(pic.formula_of_rank[r] / top);
    dl->AddLine(ImVec2(x - bar / 2 - 6, fy), ImVec2(x + bar / 2 + 6, fy), yellow, 3.0f);
  }
  dl->AddText(ImVec2(o.x + w + 10, o.y), yellow, "formula per rank (yellow ticks)");
  if (!pic.formula_text.empty())
    dl->AddText(ImVec2(o.x + w + 10, o.y + ImGui::GetTextLineHeight() + 2), yellow, drawable(pic.formula_text).c_str());
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

std::string drawable(std::string_view text) {
  static const struct {
    std::string_view from, to;
  } swaps[] = {{"\u03a8", "Psi"}, {"\u03c8", "psi"}, {"\u2248", "~"}, {"\u2212", "-"}, {"\u2192", "->"}};
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    const auto s = std::find_if(std::begin(swaps), std::end(swaps),
                                [&](const auto& x) { return text.substr(i).starts_with(x.from); });
    if (s != std::end(swaps))
      out += s->to, i += s->from.size();
    else
      out += text[i++];
  }
  return clip_text(out);  // a trace's text: cut to what ImGui can draw (text_fit.h)
}

// The scale's grid lines across the bars' area (its labels left of it where asked).
void draw_ticks(ImDrawList* dl, const ByteScale& scale, ImVec2 area, float w, float h, bool tick_labels) {
  for (const Tick& t : scale.ticks) {
    const float y = area.y + h - h * float(t.value / scale.top);
    dl->AddLine(ImVec2(area.x - (tick_labels ? 4 : 0), y), ImVec2(area.x + w, y),
                IM_COL32(255, 255, 255, t.value == 0 ? 120 : 25));
    if (!tick_labels) continue;
    const ImVec2 ts = ImGui::CalcTextSize(t.label.c_str());
    dl->AddText(ImVec2(area.x - 8 - ts.x, y - ts.y / 2), IM_COL32(200, 200, 210, 255), t.label.c_str());
  }
}

// One phase's picture in [o, o + size]: its title, per-rank stacked bars at their peaks on
// the shared scale, the formula's line; tick labels only left of a row's first panel.
void draw_phase(ImDrawList* dl, const PhaseMemory& p, const ByteScale& scale, ImVec2 o, ImVec2 size, bool tick_labels) {
  const float line = ImGui::GetTextLineHeight();
  const ImU32 text = IM_COL32(220, 220, 225, 255), dim = IM_COL32(170, 170, 180, 255),
              yellow = IM_COL32(255, 220, 60, 230);
  dl->PushClipRect(ImVec2(o.x - kAxisWidth, o.y), ImVec2(o.x + size.x, o.y + size.y), true);
  std::uint64_t most = 0;
  for (std::uint64_t b : p.peak) most = std::max(most, b);
  // Three lines over the bars: the phase and its largest peak, the formula's value, how
  // the lab got it (its own line: "2Psi + 14Psi/N = 5.5 B/param x 1M params" is long).
  const char* state = p.in_progress ? " (in progress)" : p.in_trace ? "" : " (not run yet)";
  const std::string title = clip_text(p.label) + state + "  peak " + human_bytes(double(most));
  dl->AddText(ImVec2(o.x + 4, o.y), text, title.c_str());
  const std::string value = p.formula > 0 ? "formula " + human_bytes(p.formula) : "no formula";
  dl->AddText(ImVec2(o.x + 4, o.y + line + 1), p.formula > 0 ? yellow : dim, value.c_str());
  if (!p.formula_text.empty())
    dl->AddText(ImVec2(o.x + 4, o.y + 2 * line + 2), IM_COL32(230, 205, 90, 200), drawable(p.formula_text).c_str());
  if (ImGui::IsWindowHovered() && ImGui::IsMouseHoveringRect(o, ImVec2(o.x + size.x, o.y + 3 * line + 2)))
    ImGui::SetTooltip("%s\n%s\n%s", title.c_str(), value.c_str(),
                      drawable(p.formula_text).c_str());  // the lines a narrow panel cuts
  const float top = o.y + 3 * line + 10, h = std::max(20.0f, size.y - (top - o.y) - line - 4), w = size.x;
  const ImVec2 area(o.x, top);  // the bars' area: [area.x, area.x + w] x [top, top + h]
  draw_ticks(dl, scale, area, w, h, tick_labels);
  const int P = int(p.at_peak.size());
  const float slot = w / float(std::max(1, P)), bar = std::clamp(slot * 0.6f, 2.0f, 40.0f);
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  for (int r = 0; r < P; ++r) {
    const MemorySample& m = p.at_peak[std::size_t(r)];
    const float x = area.x + slot * (float(r) + 0.5f) - bar / 2;
    float y = top + h;
    for (MemTag t : kStackOrder) {
      const int tag = int(t);
      const float bh = h * float(double(m.bytes[std::size_t(tag)]) / scale.top);
      if (bh <= 0) continue;
      dl->AddRectFilled(ImVec2(x, y - bh), ImVec2(x + bar, y), tag_color(tag));
      y -= bh;
    }
    if (slot > 18 || r % std::max(1, P / 8) == 0) {
      char label[16];
      std::snprintf(label, sizeof label, "rank %d", r);
      const char* shown = ImGui::CalcTextSize(label).x + 6 < slot ? label : label + 5;  // "rank 3", or "3" where narrow
      dl->AddText(ImVec2(x + bar / 2 - ImGui::CalcTextSize(shown).x / 2, top + h + 2), dim, shown);
    }
    if (ImGui::IsWindowHovered() && mouse.x >= x && mouse.x <= x + bar && mouse.y >= top && mouse.y <= top + h) {
      ImGui::BeginTooltip();
      ImGui::Text("%s, rank %d: peak %s", clip_text(p.label).c_str(), r,
                  human_bytes(double(p.peak[std::size_t(r)])).c_str());
      for (int tag = 0; tag < kNumMemTags; ++tag)
        if (m.bytes[std::size_t(tag)] > 0)
          ImGui::Text("  %-10s %s", mem_tag_name(MemTag(tag)), human_bytes(double(m.bytes[std::size_t(tag)])).c_str());
      ImGui::EndTooltip();
    }
  }
  if (p.formula > 0) {
    const float fy = top + h - h * float(p.formula / scale.top);
    dl->AddLine(ImVec2(area.x, fy), ImVec2(area.x + w, fy), yellow, 2.0f);
  }
  dl->PopClipRect();
}

}  // namespace

const PhaseMemories& MemoryView::Phases(const TraceData& d) {
  const std::array<std::size_t, 4> key = {reinterpret_cast<std::size_t>(&d), d.events.size(), d.memory.size(),
                                          d.meta.size()};
  if (key != phases_key_) phases_ = memory_by_phase(d), phases_key_ = key;
  return phases_;
}

void MemoryView::Draw(const Frame& f) {
  const TraceData& d = f.session.data();
  if (d.memory.empty() || d.ranks < 1) {
    const bool reference = std::any_of(d.events.begin(), d.events.end(), [&](const Event& e) {
      return e.kind == EventKind::mark && d.role(e).part == RunPart::reference;
    });
    if (reference)  // the labs' 1-rank reference trains on rank 0 alone, its memory untraced
      ImGui::TextWrapped(
          "No memory events yet: the 1-rank reference runs first (rank 0 alone, to check the ranks against; "
          "its memory is not the ranks'). Each rank's memory shows here once the ranks start.");
    else
      ImGui::TextWrapped(
          "No memory events in this run yet (labs allocate through MemoryTracker; each allocation shows here).");
    return;
  }
  const std::string* device = d.meta_of(MetaKey::device);  // where the lab's tensors lived
  if (device && *device != "cpu")
    ImGui::Text("device memory (%s): what each rank allocated on its %s", clip_text(*device, 200).c_str(),
                *device == "cuda" ? "GPU" : "stand-in device");
  const bool phased = !Phases(d).phases.empty();
  if (phased) {
    int mode = by_phase ? 0 : 1;
    ImGui::RadioButton("peak in each phase", &mode, 0);
    ImGui::SameLine();
    ImGui::RadioButton("at the cursor", &mode, 1);
    by_phase = mode == 0;
    ImGui::SameLine(0, 20);
  }
  for (MemTag t : kStackOrder) {  // wrapped: a narrow panel shows all 8 tags too
    const int tag = int(t);
    const float need = ImGui::GetTextLineHeight() + 22 + ImGui::CalcTextSize(mem_tag_name(MemTag(tag))).x;
    if (ImGui::GetCursorPosX() + need > ImGui::GetWindowContentRegionMax().x) ImGui::NewLine();
    legend_swatch(tag_color(tag), mem_tag_name(MemTag(tag)));
  }
  ImGui::NewLine();
  if (phased && by_phase)
    DrawPhases(d.ranks);
  else
    DrawAtCursor(f);
}

// Small multiples: one row (1 x n) while each panel gets kMinPanelWidth, else two rows
// (2 x 2 for ZeRO's four stages) while their bars keep some height, else one row anyway.
void MemoryView::DrawPhases(int ranks) {
  const PhaseMemories& ph = phases_;
  const int n = int(ph.phases.size());
  ImDrawList* dl = ImGui::GetWindowDrawList();
  ImGui::Dummy(ImVec2(1, 4));
  const ImVec2 start = ImGui::GetCursorScreenPos(), avail = ImGui::GetContentRegionAvail();
  const float line = ImGui::GetTextLineHeight(), gap = 16, bottom = line + 6,
              header = 4 * line + 14;  // as draw_phase lays a cell out
  const float usable = avail.x - kAxisWidth;
  auto cell_w = [&](int cols) { return (usable - gap * float(cols - 1)) / float(cols); };
  auto bars_h = [&](int rows) { return (avail.y - bottom - gap * float(rows - 1)) / float(rows) - header; };
  const float min_w = std::max(kMinPanelWidth, 10.0f * float(ranks));
  int cols = n;
  if (n > 1 && cell_w(n) < min_w) cols = bars_h(2) >= 4 * line ? (n + 1) / 2 : n;
  if (cell_w(cols) < 60) cols = 1;
  const int rows = (n + cols - 1) / cols;
  const float cw = cell_w(cols), ch = std::max(header + 20, bars_h(rows) + header);
  const ByteScale scale = byte_scale(ph.largest(), std::clamp(int((ch - header) / (1.6f * line)), 3, 8));
  for (int i = 0; i < n; ++i) {
    const int r = i / cols, c = i % cols;
    const ImVec2 o(start.x + kAxisWidth + float(c) * (cw + gap), start.y + float(r) * (ch + gap));
    draw_phase(dl, ph.phases[std::size_t(i)], scale, o, ImVec2(cw, ch), c == 0);
  }
  ImGui::SetCursorScreenPos(ImVec2(start.x, start.y + float(rows) * ch + float(rows - 1) * gap + 4));
  ImGui::TextUnformatted("bars: each rank at its peak in the phase, one axis; yellow: the formula per rank");
  if (ph.dropped) ImGui::TextDisabled("%zu more phases not shown (the limit is %zu)", ph.dropped, kMaxMemoryPhases);
}

void MemoryView::DrawAtCursor(const Frame& f) {
  const TraceData& d = f.session.data();
  const int P = d.ranks;
  const MemoryPicture pic = memory_at(d, f.cursor_time());
  ImDrawList* dl = ImGui::GetWindowDrawList();
  ImGui::Dummy(ImVec2(1, 8));  // room for the top tick's label
  const ImVec2 start = ImGui::GetCursorScreenPos(), avail = ImGui::GetContentRegionAvail();
  const float line = ImGui::GetTextLineHeight();
  const float gutter =
      pic.formula > 0
          ? std::min(
                avail.x * 0.35f,
                10 +
                    ImGui::CalcTextSize(pic.formula_text.empty() ? "formula: 999.999 MiB" : pic.formula_text.c_str()).x)
          : 0;
  const float h = std::max(40.0f, avail.y - 2 * (line + 4)), w = std::max(40.0f, avail.x - kAxisWidth - gutter - 4);
  const ImVec2 o(start.x + kAxisWidth, start.y);  // the bars' area: [o.x, o.x + w] x [o.y, o.y + h]
  const ByteScale scale = byte_scale(pic.largest(), std::max(2, int(h / (2.5f * line))));
  draw_axis(dl, scale, o, w, h);
  const float slot = w / float(P), bar = std::clamp(slot * 0.6f, 3.0f, 60.0f);
  for (int r = 0; r < P; ++r) {
    const float x = o.x + slot * (float(r) + 0.5f) - bar / 2;
    float y = o.y + h;
    for (MemTag t : kStackOrder) {
      const int tag = int(t);
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
      dl->AddText(ImVec2(x + bar / 2 - (slot > lw + 4 ? lw / 2 : 0), o.y + h + 2), IM_COL32(210, 210, 215, 255),
                  slot > lw + 4 ? label : label + 5);
    }
  }
  if (!pic.formula_of_rank.empty())
    draw_rank_formulas(dl, pic, o, w, h, scale.top);
  else if (pic.formula > 0)
    draw_formula(dl, pic, o, w, h, scale.top);
  ImGui::SetCursorScreenPos(ImVec2(start.x, o.y + h + line + 6));
  ImGui::Text("bars: memory at the cursor; white: each rank's peak (largest %s)%s", human_bytes(pic.largest()).c_str(),
              pic.formula > 0 ? "; yellow: the formula per rank" : "");
}

}  // namespace dtl::viz
