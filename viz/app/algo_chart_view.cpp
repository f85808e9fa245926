#include "viz/app/algo_chart_view.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "viz/model/axes.h"
#include "viz/model/report_plots.h"

namespace dtl::viz {

namespace {

// An algorithm's hue, a protocol's shade: ring blues, tree oranges, nvls greens; LL light,
// Simple dark.
ImU32 series_color(const AlgoSeries& s) {
  static const ImU32 kColors[3][3] = {
      {IM_COL32(150, 200, 255, 255), IM_COL32(80, 150, 240, 255), IM_COL32(30, 90, 210, 255)},
      {IM_COL32(255, 205, 130, 255), IM_COL32(245, 150, 60, 255), IM_COL32(200, 95, 20, 255)},
      {IM_COL32(160, 235, 150, 255), IM_COL32(90, 200, 90, 255), IM_COL32(40, 150, 50, 255)}};
  return kColors[int(s.algo)][int(s.proto)];
}

constexpr float kStrip = 14;  // the winners' strip under the plot area

// Log-scale axes over the plot area [a, a + size].
struct LogAxes {
  ImVec2 a, size;
  double x_lo, x_hi, y_lo, y_hi;  // log10 of the edges
  float X(double bytes) const { return a.x + size.x * float((std::log10(bytes) - x_lo) / (x_hi - x_lo)); }
  float Y(double s) const { return a.y + size.y - size.y * float((std::log10(s) - y_lo) / (y_hi - y_lo)); }
};

// The y range: every supported prediction and every measured time, widened to whole decades.
LogAxes make_axes(const AlgoChart& c, ImVec2 a, ImVec2 size) {
  double lo = 1e300, hi = 0;
  for (const AlgoSeries& s : c.series)
    for (std::size_t i = 0; i < s.time_s.size(); ++i)
      if (s.supported[i] && s.time_s[i] > 0) lo = std::min(lo, s.time_s[i]), hi = std::max(hi, s.time_s[i]);
  for (const MeasuredPoint& p : c.measured) lo = std::min(lo, p.time_s), hi = std::max(hi, p.time_s);
  if (!(hi > 0)) lo = 1e-6, hi = 1;
  return {a,
          size,
          std::log10(kChartMinBytes) - 0.1,
          std::log10(kChartMaxBytes) + 0.1,
          std::floor(std::log10(lo) - 0.1),  // (no line on an edge)
          std::ceil(std::log10(hi) + 0.1)};
}

void draw_grid(ImDrawList* dl, const LogAxes& ax) {
  const ImU32 grid = IM_COL32(255, 255, 255, 25), dim = IM_COL32(170, 170, 180, 255);
  for (double d = ax.y_lo; d <= ax.y_hi + 1e-9; d += 1) {
    const float y = ax.Y(std::pow(10.0, d));
    dl->AddLine(ImVec2(ax.a.x - 4, y), ImVec2(ax.a.x + ax.size.x, y), grid);
    const std::string label = format_value(std::pow(10.0, d), "s");
    const ImVec2 ts = ImGui::CalcTextSize(label.c_str());
    dl->AddText(ImVec2(ax.a.x - 8 - ts.x, y - ts.y / 2), dim, label.c_str());
  }
  for (double b = kChartMinBytes; b <= kChartMaxBytes; b *= 16) {  // every other size: room for the labels
    const float x = ax.X(b);
    dl->AddLine(ImVec2(x, ax.a.y), ImVec2(x, ax.a.y + ax.size.y + 4), grid);
    const std::string label = format_bytes(b, b);
    dl->AddText(ImVec2(x - ImGui::CalcTextSize(label.c_str()).x / 2, ax.a.y + ax.size.y + kStrip + 6), dim,
                label.c_str());
  }
  dl->AddRect(ax.a, ImVec2(ax.a.x + ax.size.x, ax.a.y + ax.size.y), IM_COL32(255, 255, 255, 90));
}

// Each series as a line over the sizes where it runs; the winner's point ringed in white, and
// under the plot a strip in the winner's colour, its name above where it changes.
void draw_series(ImDrawList* dl, const AlgoChart& c, const LogAxes& ax) {
  for (const AlgoSeries& s : c.series)
    for (std::size_t i = 1; i < c.sizes.size(); ++i)
      if (s.supported[i - 1] && s.supported[i])
        dl->AddLine(ImVec2(ax.X(c.sizes[i - 1]), ax.Y(s.time_s[i - 1])), ImVec2(ax.X(c.sizes[i]), ax.Y(s.time_s[i])),
                    series_color(s), 2.0f);
  const float strip = ax.a.y + ax.size.y + 2;
  for (std::size_t i = 0; i < c.sizes.size(); ++i) {
    const AlgoSeries& w = c.series[c.winner[i]];
    dl->AddCircle(ImVec2(ax.X(c.sizes[i]), ax.Y(w.time_s[i])), 7.0f, IM_COL32(255, 255, 255, 255), 0, 2.0f);
    const float half = 0.5f * (ax.X(4 * c.sizes[i]) - ax.X(c.sizes[i]));
    const float x0 = std::max(ax.a.x, ax.X(c.sizes[i]) - half), x1 = ax.X(c.sizes[i]) + half;
    dl->AddRectFilled(ImVec2(x0, strip), ImVec2(x1, strip + kStrip - 2), series_color(w));
    if (i == 0 || c.winner[i] != c.winner[i - 1])
      dl->AddText(ImVec2(x0 + 2, strip - ImGui::GetTextLineHeight() - 2), IM_COL32(235, 235, 240, 255), w.name.c_str());
  }
  for (const MeasuredPoint& p : c.measured)
    if (p.bytes >= kChartMinBytes && p.bytes <= kChartMaxBytes)
      dl->AddCircleFilled(ImVec2(ax.X(p.bytes), ax.Y(p.time_s)), 4.5f, IM_COL32(255, 255, 255, 255));
}

void draw_legend(const AlgoChart& c) {
  for (const AlgoSeries& s : c.series) {
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const float h = ImGui::GetTextLineHeight();
    ImGui::GetWindowDrawList()->AddLine(ImVec2(p.x, p.y + h / 2), ImVec2(p.x + 22, p.y + h / 2), series_color(s), 3);
    ImGui::Dummy(ImVec2(26, h));
    ImGui::SameLine();
    ImGui::TextUnformatted(s.name.c_str());
    ImGui::SameLine(0, 18);
  }
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const float h = ImGui::GetTextLineHeight();
  ImGui::GetWindowDrawList()->AddCircleFilled(ImVec2(p.x + 8, p.y + h / 2), 4.5f, IM_COL32(255, 255, 255, 255));
  ImGui::Dummy(ImVec2(18, h));
  ImGui::SameLine();
  ImGui::Text("measured (%zu sizes)", c.measured.size());
}

}  // namespace

void draw_algo_chart_window(const AlgoChart& chart) {
  ImGui::SetNextWindowPos(ImVec2(0, 0));
  ImGui::SetNextWindowSize(ImGui::GetIO().DisplaySize);
  ImGui::Begin("dtlab which algorithm", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoSavedSettings);
  ImGui::Text("Which algorithm: predicted time per size (NCCL's tuning model, core/theory/nccl_model.h) for %s",
              chart.title.c_str());
  ImGui::TextDisabled(
      "Lines: latency + bytes / algbw per algorithm/protocol. Ringed, and the strip below: the model's pick "
      "(nccl_choose). White dots: this bench run's measured out-of-place times.");
  draw_legend(chart);
  const ImVec2 o = ImGui::GetCursorScreenPos(), avail = ImGui::GetContentRegionAvail();
  const float line = ImGui::GetTextLineHeight();
  const ImVec2 a(o.x + 80, o.y + line + 8),
      size(std::max(100.0f, avail.x - 100), std::max(80.0f, avail.y - 3 * line - 20 - kStrip));
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddText(o, IM_COL32(170, 170, 180, 255), "time per call (log)");
  const LogAxes ax = make_axes(chart, a, size);
  draw_grid(dl, ax);
  dl->PushClipRect(a, ImVec2(a.x + size.x, a.y + size.y + kStrip), true);
  draw_series(dl, chart, ax);
  dl->PopClipRect();
  const char* x_label = "size (nccl-tests' size: all_reduce's bytes per rank; log)";
  dl->AddText(ImVec2(a.x + size.x / 2 - ImGui::CalcTextSize(x_label).x / 2, a.y + size.y + kStrip + line + 8),
              IM_COL32(170, 170, 180, 255), x_label);
  ImGui::End();
}

}  // namespace dtl::viz
