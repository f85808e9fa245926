#include "viz/model/panels.h"

#include <algorithm>

namespace dtl::viz {

namespace {

// The others in `band`: the first on the left half, the rest stacked on the right.
void place_others(const std::vector<ViewKind>& others, Rect band, float gap, std::vector<PanelPlace>& out) {
  if (others.empty()) return;
  if (others.size() == 1) {
    out.push_back({others[0], band});
    return;
  }
  const float left_w = (band.w - gap) * 0.5f, right_x = band.x + left_w + gap, right_w = band.w - left_w - gap;
  out.push_back({others[0], {band.x, band.y, left_w, band.h}});
  const std::size_t n = others.size() - 1;
  if (n == 1) {
    out.push_back({others[1], {right_x, band.y, right_w, band.h}});
    return;
  }
  // Stacked: the first of them a little taller (the report's rows over the memory bars).
  const float free_h = band.h - gap * float(n - 1);
  float y = band.y;
  for (std::size_t i = 1; i < others.size(); ++i) {
    const float share = n == 2 ? (i == 1 ? 0.55f : 0.45f) : 1.0f / float(n);
    const float h = i + 1 == others.size() ? band.y + band.h - y : free_h * share;
    out.push_back({others[i], {right_x, y, right_w, h}});
    y += h + gap;
  }
}

bool any_too_small(const std::vector<PanelPlace>& places) {
  return std::any_of(places.begin(), places.end(),
                     [](const PanelPlace& p) { return p.rect.w < kMinPanelW || p.rect.h < kMinPanelH; });
}

// Full width, one under the other: the main view (listed first) as tall as the area allows,
// the others at least kStackedPanelH.
std::vector<PanelPlace> stacked(const std::vector<ViewKind>& views, Rect area, float gap) {
  std::vector<PanelPlace> out;
  float y = area.y;
  for (std::size_t i = 0; i < views.size(); ++i) {
    const float h = std::max(kStackedPanelH, i == 0 ? area.h : 0.6f * area.h);
    out.push_back({views[i], {area.x, y, area.w, h}});
    y += h + gap;
  }
  return out;
}

std::vector<PanelPlace> tiled(const std::vector<ViewKind>& unique, Rect area, float gap) {
  std::vector<ViewKind> others = unique;
  std::vector<PanelPlace> out;
  const auto timeline = std::find(others.begin(), others.end(), ViewKind::timeline);
  if (timeline == others.end() || others.size() == 1) {
    place_others(others, area, gap, out);
    return out;
  }
  const bool main = timeline == others.begin();
  others.erase(timeline);
  const float top_h = std::max(0.0f, (area.h - gap) * 0.58f), bottom_h = std::max(0.0f, area.h - gap - top_h);
  const Rect top{area.x, area.y, area.w, top_h}, bottom{area.x, area.y + top_h + gap, area.w, bottom_h};
  out.push_back({ViewKind::timeline, main ? top : bottom});
  place_others(others, main ? bottom : top, gap, out);
  return out;
}

}  // namespace

std::vector<PanelPlace> arrange_panels(const std::vector<ViewKind>& views, Rect area, float gap) {
  std::vector<ViewKind> unique;
  for (ViewKind v : views)
    if (std::find(unique.begin(), unique.end(), v) == unique.end()) unique.push_back(v);
  if (unique.empty()) return {};
  std::vector<PanelPlace> out = tiled(unique, area, gap);
  return any_too_small(out) ? stacked(unique, area, gap) : out;
}

}  // namespace dtl::viz
