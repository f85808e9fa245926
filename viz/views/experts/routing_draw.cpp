// The routing view's drawing helpers (routing_draw.h).
#include "viz/views/experts/routing_draw.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>

#include "viz/app/views.h"
#include "viz/model/text_fit.h"

namespace dtl::viz::routing_ui {

bool light(ImU32 c) {
  const float r = float((c >> IM_COL32_R_SHIFT) & 0xff), g = float((c >> IM_COL32_G_SHIFT) & 0xff),
              b = float((c >> IM_COL32_B_SHIFT) & 0xff);
  return 0.299f * r + 0.587f * g + 0.114f * b > 130;
}

ImU32 choice_color(int j, int k) {
  static const ImU32 hues[] = {IM_COL32(255, 214, 64, 255), IM_COL32(90, 190, 255, 255), IM_COL32(130, 220, 120, 255),
                               IM_COL32(235, 130, 235, 255)};
  if (k <= 4) return hues[j];
  const float t = float(j) / float(k - 1);
  return IM_COL32(int(255 - 150 * t), int(214 - 140 * t), int(64 + 60 * t), 255);
}

ImU32 heat(double t) {
  return t = std::clamp(t, 0.0, 1.0), IM_COL32(int(45 + 70 * t), int(52 + 160 * t), int(72 + 170 * t), 255);
}

std::string ordinal(int j) {
  return j < 3 ? std::string(j == 0 ? "1st" : j == 1 ? "2nd" : "3rd") : std::to_string(j + 1) + "th";
}

std::string text_of(const char* fmt, ...) {
  char buf[640];
  std::va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  return buf;
}

float text_w(const std::string& s) { return ImGui::CalcTextSize(s.c_str()).x; }

Rect section(ImDrawList* dl, const Rect& s, const char* title, const std::string& caption) {
  const float th = ImGui::CalcTextSize(title, nullptr, false, s.w).y,
              ch = ImGui::CalcTextSize(caption.c_str(), nullptr, false, s.w).y;
  dl->AddText(ImGui::GetFont(), ImGui::GetFontSize(), ImVec2(s.x, s.y), kText, title, nullptr, s.w);
  return Rect{s.x, s.y + th + 8, s.w, std::max(40.0f, s.h - ch - th - 18)};
}

void caption(ImDrawList* dl, const Rect& s, float y, const std::string& text) {
  const std::string fit = clip_text(text);  // wrapped text is drawn whole, under the panel too
  dl->AddText(ImGui::GetFont(), ImGui::GetFontSize(), ImVec2(s.x, y), kDim, fit.c_str(), nullptr, s.w);
}

void centered(ImDrawList* dl, ImVec2 a, ImVec2 z, ImU32 color, const std::string& text) {
  const ImVec2 ts = ImGui::CalcTextSize(text.c_str());
  if (ts.x + 2 <= z.x - a.x && ts.y <= z.y - a.y + 2)
    dl->AddText(ImVec2((a.x + z.x - ts.x) / 2, (a.y + z.y - ts.y) / 2), color, text.c_str());
}

void rank_band(ImDrawList* dl, int p, ImVec2 a, ImVec2 z) {
  dl->AddRectFilled(a, z, rank_color(p), 2.0f);
  const std::string full = text_of("rank %d", p);
  centered(dl, a, z, light(rank_color(p)) ? kInk : kText, text_w(full) + 4 <= z.x - a.x ? full : text_of("r%d", p));
}

void dashed(ImDrawList* dl, float x0, float x1, float y, ImU32 color) {
  for (float x = x0; x < x1; x += 9) dl->AddLine(ImVec2(x, y), ImVec2(std::min(x + 5, x1), y), color, 1.5f);
}

bool hovering(ImVec2 a, ImVec2 z) {
  const ImVec2 m = ImGui::GetIO().MousePos;
  return ImGui::IsWindowHovered() && m.x >= a.x && m.x < z.x && m.y >= a.y && m.y < z.y;
}

}  // namespace dtl::viz::routing_ui
