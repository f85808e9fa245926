// Memory view: per-rank stacked bars by tag (param, grad, optimizer, activation, comm) at
// the cursor time, a peak marker per rank, and the lab's formula line when it has one
// (meta "predicted_bytes_per_rank", e.g. ZeRO's 16 / 4+12/N / 2+14/N / 16/N bytes per
// parameter times the parameter count).
#include <cstdio>

#include "viz/app/views.h"

namespace dtl::viz {

void MemoryView::Draw(const Frame& f) {
  const TraceData& d = f.session.data();
  const int P = d.ranks;
  if (d.memory.empty() || P < 1) {
    ImGui::TextWrapped("No memory events in this run yet (labs allocate through MemoryTracker; each allocation shows here).");
    return;
  }
  const std::int64_t t = f.cursor_time();
  std::vector<MemorySample> now(static_cast<std::size_t>(P)), peak(static_cast<std::size_t>(P));
  std::vector<std::uint64_t> peak_total(std::size_t(P), 0);
  for (const MemorySample& m : d.memory) {
    if (m.rank < 0 || m.rank >= P) continue;
    std::uint64_t total = 0;
    for (auto b : m.bytes) total += b;
    if (total >= peak_total[std::size_t(m.rank)]) {
      peak_total[std::size_t(m.rank)] = total;
      peak[std::size_t(m.rank)] = m;
    }
    if (m.t_ns <= t) now[std::size_t(m.rank)] = m;
  }
  std::uint64_t scale = 1;
  for (auto p : peak_total) scale = std::max(scale, p);
  double formula = 0;
  if (auto it = d.meta.find("predicted_bytes_per_rank"); it != d.meta.end()) formula = std::atof(it->second.c_str());
  scale = std::max<std::uint64_t>(scale, std::uint64_t(formula));

  for (int tag = 0; tag < kNumMemTags; ++tag) legend_swatch(tag_color(tag), mem_tag_name(MemTag(tag)));
  ImGui::NewLine();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  ImGui::Dummy(ImVec2(1, 6));  // keep the peak ticks clear of the legend
  const ImVec2 o = ImGui::GetCursorScreenPos(), avail = ImGui::GetContentRegionAvail();
  const float label_h = ImGui::GetTextLineHeight() + 4, h = std::max(40.0f, avail.y - 2 * label_h);
  const float slot = avail.x / float(P), bar = std::clamp(slot * 0.6f, 3.0f, 60.0f);
  for (int r = 0; r < P; ++r) {
    const float x = o.x + slot * (float(r) + 0.5f) - bar / 2;
    float y = o.y + h;
    for (int tag = 0; tag < kNumMemTags; ++tag) {
      const float bh = h * float(double(now[std::size_t(r)].bytes[std::size_t(tag)]) / double(scale));
      if (bh <= 0) continue;
      dl->AddRectFilled(ImVec2(x, y - bh), ImVec2(x + bar, y), tag_color(tag));
      y -= bh;
    }
    const float py = o.y + h - h * float(double(peak_total[std::size_t(r)]) / double(scale));
    dl->AddLine(ImVec2(x - 3, py), ImVec2(x + bar + 3, py), IM_COL32(255, 255, 255, 220), 2.0f);  // peak
    if (slot > 26) {
      char label[16];
      std::snprintf(label, sizeof label, "%d", r);
      dl->AddText(ImVec2(x, o.y + h + 2), IM_COL32(210, 210, 215, 255), label);
    }
  }
  if (formula > 0) {
    const float fy = o.y + h - h * float(formula / double(scale));
    dl->AddLine(ImVec2(o.x, fy), ImVec2(o.x + avail.x, fy), IM_COL32(255, 220, 60, 220), 1.5f);
  }
  ImGui::SetCursorScreenPos(ImVec2(o.x, o.y + h + label_h));
  ImGui::Text("bars: memory at the cursor; white tick: each rank's peak (largest %s)%s", human_bytes(double(scale)).c_str(),
              formula > 0 ? "; yellow: the formula" : "");
}

}  // namespace dtl::viz
