// Split view (tensor parallel): the weight matrices of one block (and the GPT's wte) drawn
// to scale, W as [out × in], each cut into the bands its ranks hold, in the ranks' colors
// (the timeline's lane swatches): column-parallel in bands of rows, Q/K/V by heads, row-
// parallel in bands of columns, wte by vocabulary rows, replicated ones grey. Megatron's f
// sits before each column-parallel matrix and g after each row-parallel one on the
// activation line. At the cursor, the collective that moves is named in a caption and its
// marker lights up, with an arrow in the direction of the pass. Geometry and the
// collective's meaning are viz/views/tensor_parallel/split_model.
#include <algorithm>
#include <cstdio>

#include "labs/tensor_parallel/tp_lab.h"
#include "viz/app/views.h"
#include "viz/model/text_fit.h"
#include "viz/views/tensor_parallel/split_model.h"

namespace dtl::viz {

// Tensor parallel: the weight matrices of one block cut into the slices each rank holds,
// f and g on the activation line, the collective at the cursor named and lit up
// (viz/views/tensor_parallel/split_model).
struct SplitView final : Panel {
  void Draw(const Frame& f) override;
  void Restart() override { model_key_ = {}, moment_key_ = {}; }

 private:
  void Refresh(const Frame& f);  // model_ when the meta changes, moment_ when the cursor moves
  void DrawMatrices();
  void DrawNotes() const;
  SplitModel model_;
  TpMoment moment_;
  std::array<std::size_t, 2> model_key_{};   // the trace (address, tp_split's size) it was made from
  std::array<std::size_t, 3> moment_key_{};  // (address, events, cursor)
};

namespace {

constexpr ImU32 kText = IM_COL32(220, 220, 225, 255), kDim = IM_COL32(160, 160, 170, 255),
                kEvery = IM_COL32(130, 130, 140, 255), kSpine = IM_COL32(200, 200, 210, 90),
                kHighlight = IM_COL32(255, 220, 60, 255), kInk = IM_COL32(15, 15, 20, 255);
constexpr float kGap = 30, kMarkerRadius = 8;

bool light(ImU32 c) {
  const float r = float((c >> IM_COL32_R_SHIFT) & 0xff), g = float((c >> IM_COL32_G_SHIFT) & 0xff),
              b = float((c >> IM_COL32_B_SHIFT) & 0xff);
  return 0.299f * r + 0.587f * g + 0.114f * b > 130;
}

const char* split_text(SplitKind k) {
  switch (k) {
    case SplitKind::column: return "column-parallel: rows";
    case SplitKind::qkv_column: return "column: Q, K, V by heads";
    case SplitKind::row: return "row-parallel: columns";
    case SplitKind::vocab_rows: return "vocab-parallel: rows";
    case SplitKind::replicated: return "replicated";
  }
  return "";
}

std::string shape_text(const SplitMatrix& m) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "[%lld \xc3\x97 %lld] %s", static_cast<long long>(m.rows),
                static_cast<long long>(m.cols), split_text(m.split));
  return buf;
}

ImU32 band_color(const SplitBand& b) { return b.owner < 0 ? kEvery : rank_color(b.owner); }

// One band's rectangle in pixels.
void band_rect(const SplitMatrix& m, const SplitBand& b, const Rect& r, ImVec2& a, ImVec2& z) {
  const float sx = r.w / float(m.cols), sy = r.h / float(m.rows);
  a = ImVec2(r.x + float(b.c0) * sx, r.y + float(b.r0) * sy);
  z = ImVec2(r.x + float(b.c1) * sx, r.y + float(b.r1) * sy);
}

void band_tooltip(const SplitMatrix& m, const SplitBand& b) {
  ImGui::BeginTooltip();
  ImGui::Text("%s  [%lld x %lld]", clip_text(m.name).c_str(), static_cast<long long>(m.rows),
              static_cast<long long>(m.cols));
  ImGui::Text("%s: rows %lld..%lld, columns %lld..%lld", clip_text(b.label).c_str(), static_cast<long long>(b.r0),
              static_cast<long long>(b.r1 - 1), static_cast<long long>(b.c0), static_cast<long long>(b.c1 - 1));
  ImGui::TextDisabled("%s", split_text(m.split));
  ImGui::EndTooltip();
}

void draw_matrix(ImDrawList* dl, const SplitMatrix& m, const Rect& r, const Rect& slot, float label_y) {
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const bool hovered = ImGui::IsWindowHovered();
  for (const SplitBand& b : m.bands) {
    ImVec2 a, z;
    band_rect(m, b, r, a, z);
    dl->AddRectFilled(a, z, band_color(b));
    dl->AddRect(a, z, IM_COL32(20, 20, 26, 255));
    // "rank 1", or where that does not fit "r1"
    char text[48];
    std::snprintf(text, sizeof text, "%s", b.label.c_str());
    if (b.owner >= 0 && ImGui::CalcTextSize(text).x + 4 > z.x - a.x) std::snprintf(text, sizeof text, "r%d", b.owner);
    const ImVec2 ts = ImGui::CalcTextSize(text);
    if (ts.x + 4 <= z.x - a.x && ts.y <= z.y - a.y)
      dl->AddText(ImVec2((a.x + z.x - ts.x) / 2, (a.y + z.y - ts.y) / 2), light(band_color(b)) ? kInk : kText, text);
    if (hovered && mouse.x >= a.x && mouse.x < z.x && mouse.y >= a.y && mouse.y < std::max(z.y, a.y + 3))
      band_tooltip(m, b);
  }
  dl->AddRect(ImVec2(r.x - 1, r.y - 1), ImVec2(r.x + r.w + 1, r.y + r.h + 1), IM_COL32(230, 230, 235, 200));
  const std::string shape = shape_text(m);
  const float line = ImGui::GetTextLineHeight(), cx = slot.x + slot.w / 2;
  const std::string name = clip_text(m.name);
  dl->AddText(ImVec2(cx - ImGui::CalcTextSize(name.c_str()).x / 2, label_y), kText, name.c_str());
  dl->AddText(ImVec2(cx - ImGui::CalcTextSize(shape.c_str()).x / 2, label_y + line), kDim, shape.c_str());
}

// An arrow along the activation line from x0 to x1 (either way).
void arrow(ImDrawList* dl, float x0, float x1, float y, ImU32 color, float thickness) {
  dl->AddLine(ImVec2(x0, y), ImVec2(x1, y), color, thickness);
  const float d = x1 > x0 ? -6.0f : 6.0f;
  dl->AddTriangleFilled(ImVec2(x1, y), ImVec2(x1 + d, y - 4), ImVec2(x1 + d, y + 4), color);
}

void draw_marker(ImDrawList* dl, const SplitMarker& k, ImVec2 c, bool lit) {
  const ImU32 fill = lit ? kHighlight : k.op == 'f' ? IM_COL32(90, 200, 210, 255) : IM_COL32(230, 140, 200, 255);
  if (lit) dl->AddCircle(c, kMarkerRadius + 7, kHighlight, 0, 2.0f);  // a halo: this one is moving now
  dl->AddCircleFilled(c, lit ? kMarkerRadius + 3 : kMarkerRadius, fill);
  dl->AddCircle(c, lit ? kMarkerRadius + 3 : kMarkerRadius, IM_COL32(20, 20, 26, 255));
  const char text[2] = {k.op, 0};
  const ImVec2 ts = ImGui::CalcTextSize(text);
  dl->AddText(ImVec2(c.x - ts.x / 2, c.y - ts.y / 2 - 1), kInk, text);
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const float dx = mouse.x - c.x, dy = mouse.y - c.y;
  if (ImGui::IsWindowHovered() && dx * dx + dy * dy <= (kMarkerRadius + 3) * (kMarkerRadius + 3))
    ImGui::SetTooltip("%s", marker_tooltip(k.op));
}

void legend(int T) {
  for (int r = 0; r < std::min(T, 16); ++r) legend_swatch(rank_color(r), ("rank " + std::to_string(r)).c_str());
  if (T > 16) ImGui::TextDisabled("... (colors repeat)"), ImGui::SameLine(0, 14);
  legend_swatch(kEvery, "every rank");
  ImGui::NewLine();
  ImGui::TextDisabled(
      "f: identity forward, all-reduce backward \xc2\xb7 g: all-reduce forward, identity backward (hover one)");
}

}  // namespace

void SplitView::Refresh(const Frame& f) {
  const TraceData& d = f.session.data();
  const auto it = d.meta.find(kTpSplitMeta);
  const std::array<std::size_t, 2> key = {reinterpret_cast<std::size_t>(&d),
                                          it == d.meta.end() ? 0 : it->second.size() + 1};
  if (key != model_key_) model_ = split_model(d), model_key_ = key, moment_key_ = {};
  const std::array<std::size_t, 3> mkey = {key[0], d.events.size(), f.cursor};
  if (mkey == moment_key_) return;
  moment_key_ = mkey;
  moment_ = TpMoment{};
  const auto& steps = f.session.steps();
  if (f.cursor == 0) return;
  if (f.session.unit() == StepUnit::collectives && f.cursor <= steps.size())
    moment_ = tp_moment(d, model_, steps[f.cursor - 1]);
  else
    moment_ = tp_moment_at(d, model_, f.cursor_time());
}

void SplitView::Draw(const Frame& f) {
  Refresh(f);
  if (model_.empty()) {
    ImGui::TextWrapped("%s", clip_text(model_.message).c_str());
    DrawNotes();
    return;
  }
  ImGui::Text(
      "T = %d ranks \xc2\xb7 %s, block 0 of %d (every block is split alike) \xc2\xb7 W is [out \xc3\x97 in], rows = "
      "output features",
      model_.T, clip_text(model_.model, 200).c_str(), model_.layers);
  legend(model_.T);
  if (moment_.valid)
    ImGui::TextColored(ImVec4(1, 0.86f, 0.24f, 1), "moving now: %s", clip_text(moment_.caption).c_str());
  else
    ImGui::TextDisabled("step or scrub the run: the collective at the cursor is named here and its f or g lights up");
  DrawNotes();
  DrawMatrices();
}

void SplitView::DrawNotes() const {  // each clipped, at most kMaxDrawnItems (a trace may hold any)
  for (std::size_t i = 0; i < shown_count(model_.notes.size()); ++i)
    ImGui::TextDisabled("left out: %s", clip_text(model_.notes[i]).c_str());
  if (model_.notes.size() > kMaxDrawnItems) ImGui::TextDisabled("%s", more_line(model_.notes.size()).c_str());
}

void SplitView::DrawMatrices() {
  const float line = ImGui::GetTextLineHeight();
  std::vector<float> label_w;
  for (const SplitMatrix& m : model_.matrices)
    label_w.push_back(std::max(ImGui::CalcTextSize(m.name.c_str()).x, ImGui::CalcTextSize(shape_text(m).c_str()).x));
  const ImVec2 start = ImGui::GetCursorScreenPos(), avail = ImGui::GetContentRegionAvail();
  const Rect area{start.x + 16, start.y + 4, std::max(40.0f, avail.x - 20),
                  std::max(40.0f, avail.y - 8)};  // room for a lit marker's halo
  const SplitLayout g = layout_split(model_, area, label_w, 2 * line + 6, kGap);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  for (std::size_t i = 0; i < g.matrices.size(); ++i) {  // the activation line through every slot, end to end
    const float x0 = i == 0 ? g.matrices[i].x : g.slots[i].x,
                x1 = i + 1 == g.matrices.size() ? g.matrices[i].x + g.matrices[i].w : g.slots[i].x + g.slots[i].w;
    dl->AddLine(ImVec2(x0, g.spine[i]), ImVec2(x1, g.spine[i]), kSpine);
  }
  for (std::size_t i = 0; i < g.matrices.size(); ++i) {
    const Rect& s = g.slots[i];
    draw_matrix(dl, model_.matrices[i], g.matrices[i], s, s.y + s.h - 2 * line - 4);
  }
  for (std::size_t k = 0; k < model_.markers.size(); ++k) {
    const SplitMarker& mk = model_.markers[k];
    const bool lit = moment_.marker == int(k);
    const float y = g.spine[mk.matrix], x = g.marker_x[k], half = kGap / 2 + 16;
    const bool rightward = moment_.forward || moment_.regather;  // a re-gather runs f's forward again
    if (lit) arrow(dl, rightward ? x - half : x + half, rightward ? x + half : x - half, y, kHighlight, 3.0f);
    draw_marker(dl, mk, ImVec2(x, y), lit);
  }
  ImGui::Dummy(avail);
}

namespace {
std::unique_ptr<Panel> make_split(const PanelSettings&) { return std::make_unique<SplitView>(); }
const bool registered = register_panel({kSplitView, "Tensor parallel: who holds which slice", make_split});
}  // namespace

}  // namespace dtl::viz
