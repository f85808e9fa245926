// Activations view (the gpt lab and tensor_parallel --model gpt; the grid lab writes the same
// meta and rows but lists no such view: six would not tile): one
// rank's activation bytes over the step at the cursor, as its MemoryTracker counted them (the
// memory events), beside the lines its formula draws (meta "activation_formula.<rank>",
// labs/train/gpt_activation_report.h):
//   kept    every micro-batch in flight after its forward (blocks × block + end)
//   peak    kept, plus a running block's recomputed set beyond the end it no longer holds
// Under the curve, a strip of the rank's block spans: forward, backward, and recomputation
// (a forward run again inside backward), so the staircase up through forward and down
// through backward reads against what the rank was doing. The step is the stretch around
// the cursor where the rank held any activation (it holds none between steps).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "labs/train/gpt_activation_report.h"
#include "viz/app/views.h"
#include "viz/model/text_fit.h"

namespace dtl::viz {

namespace {

const ImU32 kCurve = IM_COL32(120, 190, 255, 255), kKept = IM_COL32(255, 214, 64, 255),
            kPeak = IM_COL32(255, 150, 60, 255), kText = IM_COL32(220, 220, 225, 255),
            kDim = IM_COL32(150, 150, 160, 255), kAxis = IM_COL32(90, 90, 100, 255);
const ImU32 kForward = IM_COL32(110, 195, 105, 255), kBackward = IM_COL32(40, 125, 80, 255),
            kRecompute = IM_COL32(150, 110, 200, 255);

struct Lines {  // one rank's formula (bytes); ok = false when the trace has none or it is malformed
  bool ok = false;
  std::string recompute;
  int blocks = 0, in_flight = 1;
  double block = 0, end = 0, recomputed = 0, kept = 0, peak = 0, paper_block = 0;
};

double byte_field(const nlohmann::json& j, const char* key, bool& ok) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return ok = false, 0.0;
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < 0 || v > 1e18) ok = false;
  return v;
}

Lines read_lines(const TraceData& d, int rank) {
  Lines l;
  const auto it = d.meta.find(meta_key_name(MetaKey::activation_formula, std::to_string(rank)));
  if (it == d.meta.end()) return l;
  const nlohmann::json j = nlohmann::json::parse(it->second, nullptr, false);
  if (!j.is_object() || !j.contains("recompute") || !j["recompute"].is_string()) return l;
  l.ok = true;
  l.recompute = printable(j["recompute"].get<std::string>(), 16);
  l.block = byte_field(j, "block", l.ok), l.end = byte_field(j, "end", l.ok);
  l.recomputed = byte_field(j, "recomputed", l.ok), l.kept = byte_field(j, "kept", l.ok);
  l.peak = byte_field(j, "peak", l.ok), l.paper_block = byte_field(j, "paper_block", l.ok);
  l.blocks = int(std::min(byte_field(j, "blocks", l.ok), 1e6));
  l.in_flight = int(std::min(byte_field(j, "in_flight", l.ok), 1e6));
  return l;
}

struct Point {
  std::int64_t t;
  double bytes;
};

// The rank's activation samples in the step at time t: from the last moment it held none
// before t to the next one after (t itself at zero: the next stretch that holds some).
std::vector<Point> step_at(const TraceData& d, int rank, std::int64_t t) {
  std::vector<Point> all;
  for (const MemorySample& s : d.memory)
    if (s.rank == rank) all.push_back({s.t_ns, double(s.bytes[std::size_t(MemTag::activation)])});
  if (all.empty()) return {};
  std::size_t at =
      std::size_t(std::upper_bound(all.begin(), all.end(), t, [](std::int64_t v, const Point& p) { return v < p.t; }) -
                  all.begin());
  at = at == 0 ? 0 : at - 1;
  if (all[at].bytes == 0)  // between steps: the next stretch
    while (at + 1 < all.size() && all[at].bytes == 0) ++at;
  std::size_t first = at, last = at;
  while (first > 0 && all[first].bytes > 0) --first;
  while (last + 1 < all.size() && all[last].bytes > 0) ++last;
  return {all.begin() + std::ptrdiff_t(first), all.begin() + std::ptrdiff_t(last) + 1};
}

struct Plot {
  ImVec2 o, size;  // the curve's area
  std::int64_t t0, t1;
  double top;
  float x(std::int64_t t) const {
    return o.x + size.x * float(double(t - t0) / double(std::max<std::int64_t>(1, t1 - t0)));
  }
  float y(double b) const { return o.y + size.y - size.y * float(b / top); }
};

void dashed_line(ImDrawList* dl, float x0, float x1, float y, ImU32 color) {
  for (float x = x0; x < x1; x += 12) dl->AddLine(ImVec2(x, y), ImVec2(std::min(x + 7, x1), y), color, 2.0f);
}

void draw_curve(ImDrawList* dl, const Plot& p, const std::vector<Point>& pts) {
  for (std::size_t i = 0; i + 1 < pts.size(); ++i) {  // a step function: flat until the next event
    const float x0 = p.x(pts[i].t), x1 = p.x(pts[i + 1].t), y = p.y(pts[i].bytes);
    dl->AddRectFilled(ImVec2(x0, y), ImVec2(std::max(x1, x0 + 1), p.y(0)), IM_COL32(120, 190, 255, 60));
    dl->AddLine(ImVec2(x0, y), ImVec2(x1, y), kCurve, 2.0f);
    dl->AddLine(ImVec2(x1, y), ImVec2(x1, p.y(pts[i + 1].bytes)), kCurve, 2.0f);
  }
}

// The rank's block spans in the window, colored by pass, in a strip under the curve.
void draw_passes(ImDrawList* dl, const TraceData& d, const Plot& p, int rank, float y0, float h) {
  for (const Event& e : d.events) {
    if (e.rank != rank || e.kind != EventKind::compute || e.end_ns < p.t0 || e.begin_ns > p.t1) continue;
    const Role& r = d.role(e);
    if (r.block < 0) continue;
    const ImU32 c = r.pass == Pass::forward     ? kForward
                    : r.pass == Pass::recompute ? kRecompute
                    : r.pass == Pass::backward  ? kBackward
                                                : 0;
    if (!c) continue;
    const float x0 = p.x(std::max(e.begin_ns, p.t0)), x1 = p.x(std::min(e.end_ns, p.t1));
    dl->AddRectFilled(ImVec2(x0, y0), ImVec2(std::max(x1, x0 + 1), y0 + h), c);
  }
}

std::string bytes_text(double b) { return human_bytes(b); }

}  // namespace

struct ActivationView final : Panel {
  int rank = 0;
  void Draw(const Frame& f) override;
};

void ActivationView::Draw(const Frame& f) {
  const TraceData& d = f.session.data();
  if (d.ranks < 1) return ImGui::TextWrapped("No ranks in this trace yet.");
  rank = std::clamp(rank, 0, d.ranks - 1);
  if (d.ranks > 1) ImGui::SliderInt("rank", &rank, 0, d.ranks - 1);
  const Lines l = read_lines(d, rank);
  if (!l.ok)
    return ImGui::TextWrapped(
        "No activation formula for rank %d in this trace: the GPT labs write one (dtlab run gpt, "
        "tensor_parallel --model gpt with one --sequence-parallel mode).",
        rank);
  const std::vector<Point> pts = step_at(d, rank, f.cursor_time());
  ImGui::Text("recompute %s: each block keeps %s (Korthikanti et al.'s count: %s); a block running holds %s more",
              clip_text(l.recompute, 200).c_str(), bytes_text(l.block).c_str(), bytes_text(l.paper_block).c_str(),
              bytes_text(l.recomputed).c_str());
  double measured_peak = 0;
  for (const Point& q : pts) measured_peak = std::max(measured_peak, q.bytes);
  ImGui::Text("this step, rank %d: peak %s measured, %s by the formula (%d block%s, %d micro-batch%s in flight)", rank,
              bytes_text(measured_peak).c_str(), bytes_text(l.peak).c_str(), l.blocks, l.blocks == 1 ? "" : "s",
              l.in_flight, l.in_flight == 1 ? "" : "es");
  legend_swatch(kCurve, "activation bytes (the tracker's)");
  legend_swatch(kKept, "kept after forward (formula)");
  legend_swatch(kPeak, "peak (formula)");
  legend_swatch(kForward, "forward");
  legend_swatch(kBackward, "backward");
  legend_swatch(kRecompute, "recompute");
  ImGui::NewLine();
  if (pts.size() < 2) return ImGui::TextWrapped("No activation held by rank %d near the cursor yet.", rank);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 start = ImGui::GetCursorScreenPos(), avail = ImGui::GetContentRegionAvail();
  const float line = ImGui::GetTextLineHeight(), left = 80, strip = line;
  const Plot p{ImVec2(start.x + left, start.y + line),
               ImVec2(std::max(40.0f, avail.x - left - 10), std::max(40.0f, avail.y - 4 * line - strip)), pts.front().t,
               pts.back().t, std::max({measured_peak, l.peak, l.kept, 1.0}) * 1.1};
  dl->AddLine(ImVec2(p.o.x, p.y(0)), ImVec2(p.o.x + p.size.x, p.y(0)), kAxis);
  dl->AddLine(ImVec2(p.o.x, p.o.y), ImVec2(p.o.x, p.y(0)), kAxis);
  draw_curve(dl, p, pts);
  for (const auto& [value, color] : {std::pair{l.kept, kKept}, std::pair{l.peak, kPeak}}) {
    dashed_line(dl, p.o.x, p.o.x + p.size.x, p.y(value), color);
    const std::string text = bytes_text(value);
    dl->AddText(ImVec2(p.o.x - 6 - ImGui::CalcTextSize(text.c_str()).x, p.y(value) - line / 2), color, text.c_str());
  }
  dl->AddText(ImVec2(p.o.x - 6 - ImGui::CalcTextSize("0 B").x, p.y(0) - line / 2), kDim, "0 B");
  draw_passes(dl, d, p, rank, p.y(0) + 4, strip);
  char span[64];
  std::snprintf(span, sizeof span, "%.3f ms", double(p.t1 - p.t0) * 1e-6);
  dl->AddText(ImVec2(p.o.x, p.y(0) + strip + 8), kText, span);
  ImGui::SetCursorScreenPos(ImVec2(start.x, p.y(0) + strip + 2 * line + 10));
}

namespace {
std::unique_ptr<Panel> make_activations(const PanelSettings&) { return std::make_unique<ActivationView>(); }
const bool registered = register_panel(
    {kActivationView, "Activations over a step: kept, recomputed, against the formula", make_activations});
}  // namespace

}  // namespace dtl::viz
