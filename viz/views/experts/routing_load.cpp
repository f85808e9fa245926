// The routing view's third picture (routing_view.cpp): the kept slots per expert, experts
// grouped by the rank holding them (e on e/(E/EP)), beside the capacity C·EP when tokens over
// it are dropped and the balanced load T·k/E.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "viz/app/views.h"
#include "viz/views/experts/routing_draw.h"
#include "viz/views/experts/routing_meta.h"

namespace dtl::viz::routing_ui {

namespace {

// The capacity's and the balanced load's lines, keyed above the bars; returns the y below the key.
float load_key(ImDrawList* dl, const Rect& r, const MoeRouting& m, double cap, double mean) {
  const float line = ImGui::GetTextLineHeight();
  float x = r.x, y = r.y;
  auto key = [&](ImU32 color, int style, const std::string& text) {  // style: 0 none, 1 a line, 2 dashes
    const float w = (style ? 24 : 0) + text_w(text);
    if (x > r.x && x + w > r.x + r.w) x = r.x, y += line + 2;
    if (style == 1) dl->AddLine(ImVec2(x, y + line / 2), ImVec2(x + 18, y + line / 2), color, 2.0f);
    if (style == 2) dashed(dl, x, x + 18, y + line / 2, color);
    dl->AddText(ImVec2(x + (style ? 24 : 0), y), color, text.c_str());
    x += w + 20;
  };
  if (m.drop)
    key(kCapacity, 1,
        text_of("capacity C\xc2\xb7"
                "EP = %d\xc2\xb7%d = %g",
                m.C, m.P, cap));
  else
    key(kCapacity, 0, "no capacity (none dropped)");
  key(kMean, 2, text_of("balanced T\xc2\xb7k/E = %g", mean));
  return y + line + 6;
}

}  // namespace

void draw_loads(ImDrawList* dl, const Rect& s, const MoeRouting& m, const MoeBlock& b, const MoeTotals& t) {
  const std::string c =
      m.capacity_factor > 0
          ? text_of("\xe2\x8c\x88%g\xc2\xb7%d\xc2\xb7%d/%d\xe2\x8c\x89 = ", m.capacity_factor, m.k, m.T / m.P, m.E)
          : "";
  const std::string text =
      m.drop ? text_of(
                   "Capacity C = \xe2\x8c\x88"
                   "c\xc2\xb7k\xc2\xb7(T/EP)/E\xe2\x8c\x89 = %s%d slots per expert and rank "
                   "(c: --capacity-factor), so an expert keeps at most C\xc2\xb7"
                   "EP = %d over the %d ranks. "
                   "Dropped: %.0f of T\xc2\xb7k = %.0f slots (%.1f%%).",
                   c.c_str(), m.C, m.C * m.P, m.P, t.dropped, t.slots, 100 * t.dropped / t.slots)
             : text_of(
                   "No capacity (--overflow pad): every expert takes all its tokens (a fixed-size buffer "
                   "would be padded to the largest load). Busiest expert: %.2f\xc3\x97 the balanced T\xc2\xb7k/E = %g.",
                   t.most_kept / t.mean_load, t.mean_load);
  const Rect r = section(dl, s, "load: kept slots per expert, all ranks", text);
  const int E = m.E, P = m.P, per = E / P;
  const double cap = m.drop ? double(m.C) * P : 0, mean = t.mean_load,
               top = 1.04 * std::max({t.most_kept, cap, mean, 1.0});
  const float line = ImGui::GetTextLineHeight(), gap = P > 1 && P <= 64 ? 6.0f : 0.0f,
              left = text_w(text_of("%.0f", top)) + 8;
  const float bw = std::min(48.0f, (r.w - left - gap * float(P - 1)) / float(E)),
              y0 = load_key(dl, r, m, cap, mean) + line;
  const float y1 = r.y + r.h - 2 * line - 10, x1 = r.x + left + float(E) * bw + gap * float(P - 1);
  auto x = [&](int e) { return r.x + left + float(e) * bw + float(e / per) * gap; };
  auto y = [&](double v) { return y1 - float(v / top) * (y1 - y0); };
  for (int e = 0; e < E; ++e) {
    const double v = b.kept[std::size_t(e)];
    const ImVec2 a(x(e) + (bw >= 6 ? 1 : 0), y(v)), z(x(e) + bw - (bw >= 3 ? 1 : 0), y1);
    dl->AddRectFilled(a, z, rank_color(e / per));
    const std::string value = text_of("%.0f", v), id = std::to_string(e);
    const bool inside =
        m.drop && y(cap) > a.y - line && y(cap) < a.y - 1 && z.y - a.y > line + 4;  // not over the capacity line
    if (text_w(value) <= bw)
      dl->AddText(ImVec2((a.x + z.x - text_w(value)) / 2, inside ? a.y + 2 : a.y - line),
                  inside && light(rank_color(e / per)) ? kInk : kText, value.c_str());
    if (text_w(id) <= bw) dl->AddText(ImVec2((a.x + z.x - text_w(id)) / 2, y1 + 2), kDim, id.c_str());
    if (hovering(ImVec2(x(e), y0 - line), ImVec2(x(e) + bw, y1)))
      ImGui::SetTooltip("expert %d (on rank %d): %.0f slots kept%s%s", e, e / per, v,
                        m.drop ? text_of(" of %g", cap).c_str() : "",
                        t.routed.empty() ? "" : text_of(", %.0f routed to it", t.routed[std::size_t(e)]).c_str());
  }
  dl->AddLine(ImVec2(r.x + left, y1), ImVec2(x1, y1), kSeparator);
  for (int p = 0; p < P && P <= 64; ++p)
    rank_band(dl, p, ImVec2(x(p * per), y1 + line + 4), ImVec2(x(p * per + per - 1) + bw, y1 + 2 * line + 6));
  caption(dl, s, y1 + 2 * line + 16, text);
  auto tick = [&](double v, ImU32 color) {  // a line's value at the left, as on an axis
    dl->AddText(ImVec2(r.x + left - 6 - text_w(text_of("%.0f", v)), y(v) - line / 2), color,
                text_of("%.0f", v).c_str());
  };
  dashed(dl, r.x + left, x1, y(mean), kMean);
  if (!m.drop || std::fabs(y(mean) - y(cap)) >= line) tick(mean, kMean);
  tick(0, kDim);
  if (m.drop) dl->AddLine(ImVec2(r.x + left, y(cap)), ImVec2(x1, y(cap)), kCapacity, 2.0f), tick(cap, kCapacity);
}

}  // namespace dtl::viz::routing_ui
