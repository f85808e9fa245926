// Routing view (experts lab): one MoE block's routing in the training step at the cursor, from the
// meta "moe_routing" that rank 0 writes (labs/experts/experts_measure.cpp, publish_routing;
// read and summed in routing_meta.h). Three pictures side by side, a selector picking the block:
//   routing     tokens × experts: a cell where a token chose an expert, colored by its choice
//               rank j, red where that slot was dropped over the expert's capacity (the trace's
//               "routed"; older traces keep only −1, and their dropped slots go in a ✗ column
//               at the right); token rows grouped by the rank that routes them
//   all-to-all  the dispatch as a rank × rank matrix of rows, the count in each cell, the
//               diagonal (rows that stay on their rank) outlined, the sums across and down
//   load        kept slots per expert, experts grouped by the rank holding them (e on
//               e/(E/EP)), beside the capacity C·EP when tokens over it are dropped
// The captions' numbers need h and the capacity factor, which the routing does not carry:
// they come from the run's options in the trace (routing_meta.h, moe_read_run_options).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "labs/experts/experts_lab.h"
#include "viz/app/views.h"
#include "viz/views/experts/routing_draw.h"
#include "viz/views/experts/routing_meta.h"

namespace dtl::viz {

namespace {

using namespace routing_ui;
constexpr int kMaxDrawnRanks = 256;  // the all-to-all matrix: P² cells
constexpr float kGap = 32;           // between the pictures

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

// The routing of one MoE block in the training step at the cursor: tokens × experts, the dispatch's
// rank × rank rows, the experts' kept slots beside the capacity (meta "moe_routing").
struct RoutingView final : Panel {
  int block = 0;  // the MoE block shown
  void Draw(const Frame& f) override;
  void Restart() override { key_ = {}, bin_key_ = {}; }

 private:
  struct Grid {  // the routing matrix on screen
    Bins rows, cols;
    float x0 = 0, y0 = 0, drop_x = 0, drop_w = 0;
    float x(int e) const { return x0 + float(e / cols.per) * cols.px; }
    float y(double t) const { return y0 + float(t / rows.per) * rows.px; }
    float w() const { return float(cols.n) * cols.px; }  // the experts' columns, without the ✗ column
    float h() const { return float(rows.n) * rows.px; }
  };
  void Refresh(const TraceData& d, std::int64_t cursor_ns);
  void Header();
  void Bin(const Grid& g);  // cells_ for the block at g's bins
  void DrawMatrix(ImDrawList* dl, const Rect& s);
  void DrawCells(ImDrawList* dl, const Grid& g) const;
  void MatrixLabels(ImDrawList* dl, const Grid& g) const;
  void MatrixTooltip(const Grid& g) const;
  void DrawAllToAll(ImDrawList* dl, const Rect& s) const;
  void AllToAllLabels(ImDrawList* dl, const Rect& r, float x0, float y0, float cell) const;
  void DrawLoads(ImDrawList* dl, const Rect& s) const;
  const MoeBlock& Shown() const { return m_.blocks[std::size_t(block)]; }
  MoeRouting m_;
  MoeTotals totals_;                  // the block shown's
  std::array<std::size_t, 3> key_{};  // the trace (address, moe_routing's size, report's size)
  std::int64_t cursor_ns_ = -1;       // where the shown step was looked up
  std::size_t shown_ = 0;             // its index in m_.steps
  std::array<int, 3> bin_key_{};      // (block, tokens per row, experts per column) of cells_
  int totals_block_ = -1;
  MoeCells cells_;
};

// The meta parsed again when it changed; the step shown follows the cursor: the routing of
// the training step it is in (or the last one published before it).
void RoutingView::Refresh(const TraceData& d, std::int64_t cursor_ns) {
  const std::string *meta = d.meta_of(MetaKey::moe_routing), *report = d.meta_of(MetaKey::report);
  const std::array<std::size_t, 3> key = {reinterpret_cast<std::size_t>(&d), meta ? meta->size() + 1 : 0,
                                          report ? report->size() + 1 : 0};
  if (key != key_) {
    key_ = key, bin_key_ = {}, totals_block_ = -1, cursor_ns_ = -1;
    m_ = meta ? parse_moe_routing(*meta) : MoeRouting{};
    if (!m_.blocks.empty()) moe_read_run_options(d, m_);
  }
  if (cursor_ns != cursor_ns_ && !m_.blocks.empty()) {
    const std::size_t shown = show_step(m_, training_step_at(d, cursor_ns));
    if (shown != shown_ || cursor_ns_ < 0) bin_key_ = {}, totals_block_ = -1;
    shown_ = shown, cursor_ns_ = cursor_ns;
  }
  block = std::clamp(block, 0, std::max(0, int(m_.blocks.size()) - 1));
  if (!m_.blocks.empty() && totals_block_ != block) totals_ = moe_totals(m_, Shown()), totals_block_ = block;
}

void RoutingView::Draw(const Frame& f) {
  Refresh(f.session.data(), f.cursor_time());
  if (!f.session.data().meta_of(MetaKey::moe_routing))
    return ImGui::TextWrapped(
        "%s", f.session.live() && !f.session.finished()
                  ? "The routing appears when the first training step ends: rank 0 then writes the meta "
                    "\"moe_routing\". Step the run (or play it)."
                  : "This trace has no meta \"moe_routing\": the experts lab writes it after its first "
                    "training step ('dtlab run experts --trace FILE'); a run that stopped before then has none.");
  if (m_.blocks.empty()) return ImGui::TextWrapped("%s", m_.message.c_str());
  Header();
  Refresh(f.session.data(), f.cursor_time());  // the selector may have picked another block
  const ImVec2 start = ImGui::GetCursorScreenPos(), avail = ImGui::GetContentRegionAvail();
  const float w = std::max(480.0f, avail.x - 2 * kGap - 8), h = std::max(260.0f, avail.y - 6);
  const Rect a{start.x + 4, start.y + 4, w * 0.40f, h}, b{a.x + a.w + kGap, a.y, w * 0.28f, h},
      c{b.x + b.w + kGap, a.y, w * 0.32f, h};
  ImDrawList* dl = ImGui::GetWindowDrawList();
  DrawMatrix(dl, a), DrawAllToAll(dl, b), DrawLoads(dl, c);
  ImGui::Dummy(ImVec2(w + 2 * kGap, h));
}

void RoutingView::Header() {
  const MoeRouting& m = m_;
  const int n = int(m.blocks.size());
  ImGui::TextUnformatted("MoE block");
  for (int i = 0; i < n && n <= 8; ++i) ImGui::SameLine(), ImGui::RadioButton(std::to_string(i).c_str(), &block, i);
  if (n > 8) ImGui::SameLine(), ImGui::SetNextItemWidth(140), ImGui::SliderInt("##block", &block, 0, n - 1);
  ImGui::SameLine(), ImGui::TextDisabled("of %d, training step %d (the cursor's; %zu of the run's published)", n,
                                         m.steps.empty() ? 0 : m.steps[shown_].step, m.steps.size());
  const std::string shape =
      text_of(
          "EP = %d ranks \xc2\xb7 E = %d experts (%d per rank) \xc2\xb7 top-%d \xc2\xb7 T = %d tokens (%d per rank)",
          m.P, m.E, m.E / m.P, m.k, m.T, m.T / m.P) +
      (m.hidden > 0 ? text_of(" \xc2\xb7 h = %g", m.hidden) : "");
  const char* bands = "colored bands: the ranks that route the tokens and hold the experts";
  ImGui::SameLine(0, 24);
  if (ImGui::GetContentRegionAvail().x < text_w(shape)) ImGui::NewLine();
  ImGui::TextUnformatted(shape.c_str());
  for (int j = 0; j < std::min(m.k, 4); ++j) legend_swatch(choice_color(j, m.k), (ordinal(j) + " choice").c_str());
  if (m.k > 4) legend_swatch(choice_color(m.k - 1, m.k), ("... " + ordinal(m.k - 1)).c_str());
  if (m.drop) legend_swatch(kDrop, "dropped (over capacity)");
  if (ImGui::GetContentRegionAvail().x < text_w(bands)) ImGui::NewLine();
  ImGui::TextDisabled("%s", bands);
}

// ---- routing: tokens × experts ----

void RoutingView::Bin(const Grid& g) {
  const std::array<int, 3> key = {block, g.rows.per, g.cols.per};
  if (key == bin_key_) return;
  bin_key_ = key, cells_ = moe_cells(m_, Shown(), g.rows, g.cols);
}

void RoutingView::DrawMatrix(ImDrawList* dl, const Rect& s) {
  const bool column = m_.drop && Shown().routed.empty();  // an older trace: dropped slots without their expert
  const std::string text = text_of(
      "A cell where a token chose an expert, colored by its choice rank j (1st: the router's top "
      "probability)%s. Rows: T/EP = %d tokens per rank, rank 0's first; hover a cell.",
      !m_.drop ? ""
      : column ? "; \xe2\x9c\x97: its slots dropped over capacity"
               : "; red: a slot dropped, in the column of its expert, already full (capacity)",
      m_.T / m_.P);
  const Rect r = section(dl, s, "routing: tokens \xc3\x97 experts", text);
  const float line = ImGui::GetTextLineHeight();  // the widest label at the left: the last rank's tokens
  const float left =
      std::max(text_w(text_of("t %d\xe2\x80\x93%d", m_.T - m_.T / m_.P, m_.T - 1)), text_w("rank 000")) + 16;
  Grid g;
  g.rows = bins(m_.T, r.h - 3 * line - 12, 12);
  g.cols = bins(m_.E, r.w - left - (column ? 40 : 4), 40);
  g.x0 = r.x + left, g.y0 = r.y + line + 6;
  g.drop_x = g.x0 + g.w() + 8, g.drop_w = column ? std::clamp(g.cols.px, float(std::min(m_.k, 4) * 6), 28.0f) : 0;
  Bin(g);
  DrawCells(dl, g);
  MatrixLabels(dl, g);
  MatrixTooltip(g);
  caption(dl, s, g.y0 + g.h() + 2 * line + 12, text);
}

void RoutingView::DrawCells(ImDrawList* dl, const Grid& g) const {
  const float right = g.drop_w > 0 ? g.drop_x + g.drop_w : g.x0 + g.w(), bottom = g.y0 + g.h();
  dl->AddRectFilled(ImVec2(g.x0, g.y0), ImVec2(g.x0 + g.w(), bottom), kEmpty);
  if (g.drop_w > 0) dl->AddRectFilled(ImVec2(g.drop_x, g.y0), ImVec2(right, bottom), kEmpty);
  const float sub = m_.k <= 4 ? g.drop_w / float(m_.k) : g.drop_w;  // a sub-column per choice rank (k ≤ 4)
  for (int r = 0; r < g.rows.n; ++r) {
    const float y = g.y0 + float(r) * g.rows.px, y1 = y + g.rows.px;
    for (int c = 0; c < g.cols.n; ++c) {  // a bin with kept and dropped slots: the dropped on its right half
      const int v = cells_.cells[std::size_t(r) * std::size_t(g.cols.n) + std::size_t(c)],
                kept = v & ~MoeCells::kDropped;
      const float x = g.x0 + float(c) * g.cols.px, x1 = x + g.cols.px;
      if (kept) dl->AddRectFilled(ImVec2(x, y), ImVec2(x1, y1), choice_color(kept - 1, m_.k));
      if (v & MoeCells::kDropped)
        dl->AddRectFilled(ImVec2(kept ? std::floor((x + x1) / 2) : x, y), ImVec2(x1, y1), kDrop);
    }
    for (int j = 0; j < m_.k && g.drop_w > 0 && cells_.drops[std::size_t(r)]; ++j)
      if (cells_.drops[std::size_t(r)] >> j & 1) {
        const float x = m_.k <= 4 ? g.drop_x + float(j) * sub : g.drop_x;
        dl->AddRectFilled(ImVec2(x, y), ImVec2(x + sub, y1), kDrop);
      }
  }
  for (int c = 1; c < g.cols.n && g.cols.px >= 4; ++c)  // the columns' borders
    dl->AddLine(ImVec2(g.x0 + float(c) * g.cols.px, g.y0), ImVec2(g.x0 + float(c) * g.cols.px, bottom), kLine);
  for (int p = 1; p < m_.P && m_.P <= 64; ++p) {  // the ranks apart: their experts, their tokens
    dl->AddLine(ImVec2(g.x(p * (m_.E / m_.P)), g.y0 - 4), ImVec2(g.x(p * (m_.E / m_.P)), bottom), kSeparator, 1.5f);
    dl->AddLine(ImVec2(g.x0 - 10, g.y(double(p) * (m_.T / m_.P))), ImVec2(right, g.y(double(p) * (m_.T / m_.P))),
                kSeparator, 1.5f);
  }
  dl->AddRect(ImVec2(g.x0 - 1, g.y0 - 1), ImVec2(g.x0 + g.w() + 1, bottom + 1), kSeparator);
  if (g.drop_w > 0) dl->AddRect(ImVec2(g.drop_x - 1, g.y0 - 1), ImVec2(right + 1, bottom + 1), kSeparator);
}

void RoutingView::MatrixLabels(ImDrawList* dl, const Grid& g) const {
  const float line = ImGui::GetTextLineHeight(), bottom = g.y0 + g.h() + 3;
  const int per = m_.E / m_.P, n = m_.T / m_.P;
  for (int p = 0; p < m_.P && m_.P <= 64; ++p) {  // the experts' ranks above, the tokens' ranks at the left
    rank_band(dl, p, ImVec2(g.x(p * per) + 1, g.y0 - line - 5),
              ImVec2(g.x((p + 1) * per - 1) + g.cols.px - 1, g.y0 - 3));
    const float y0 = g.y(double(p) * n), y1 = g.y(double(p + 1) * n);
    dl->AddRectFilled(ImVec2(g.x0 - 8, y0 + 1), ImVec2(g.x0 - 3, y1 - 1), rank_color(p));
    const std::string name = text_of("rank %d", p), span = text_of("t %d\xe2\x80\x93%d", p * n, p * n + n - 1);
    if (y1 - y0 >= line) dl->AddText(ImVec2(g.x0 - 12 - text_w(name), y0 + 1), kText, name.c_str());
    if (y1 - y0 >= 2 * line + 2) dl->AddText(ImVec2(g.x0 - 12 - text_w(span), y0 + line + 1), kDim, span.c_str());
  }
  const int every =
      std::max(1, int(std::ceil((text_w(std::to_string(m_.E - 1)) + 4) / g.cols.px)) * g.cols.per);  // labels that fit
  for (int e = 0; e < m_.E; e += every)
    dl->AddText(ImVec2(g.x(e) + (g.cols.px - text_w(std::to_string(e))) / 2, bottom), kDim, std::to_string(e).c_str());
  const char* axis = "expert e (on rank e/(E/EP))";
  dl->AddText(ImVec2(g.x0 + (g.w() - text_w(axis)) / 2, bottom + line), kText, axis);
  if (g.drop_w > 0)
    dl->AddText(ImVec2(g.drop_x + (g.drop_w - text_w("\xe2\x9c\x97")) / 2, bottom), kDrop, "\xe2\x9c\x97");
  dl->AddText(ImVec2(g.x0 - text_w("token") - 12, g.y0 - line - 5), kText, "token");
}

void RoutingView::MatrixTooltip(const Grid& g) const {
  if (!hovering(ImVec2(g.x0, g.y0), ImVec2(std::max(g.drop_x + g.drop_w, g.x0 + g.w()), g.y0 + g.h()))) return;
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const int t0 = int((mouse.y - g.y0) / g.rows.px) * g.rows.per, t1 = std::min(m_.T, t0 + g.rows.per) - 1,
            n = m_.T / m_.P;
  const MoeBlock& b = Shown();
  ImGui::BeginTooltip();
  if (t0 < t1)
    ImGui::Text("tokens %d\xe2\x80\x93%d (rank %d's)", t0, t1, t0 / n);
  else
    ImGui::Text("token %d: rank %d's token %d", t0, t0 / n, t0 % n);
  for (int j = 0; j < m_.k && t0 == t1; ++j) {
    const std::size_t slot = std::size_t(t0) * std::size_t(m_.k) + std::size_t(j);
    const int e = b.routed.empty() ? b.choice[slot] : b.routed[slot];
    if (e < 0)
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kDrop), "%s choice: dropped (its expert was full)",
                         ordinal(j).c_str());
    else if (b.choice[slot] < 0)
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kDrop),
                         "%s choice: expert %d (on rank %d), dropped: it was full", ordinal(j).c_str(), e,
                         e / (m_.E / m_.P));
    else
      ImGui::Text("%s choice: expert %d (on rank %d)", ordinal(j).c_str(), e, e / (m_.E / m_.P));
  }
  if (const int e = int((mouse.x - g.x0) / g.cols.px) * g.cols.per; mouse.x < g.x0 + g.w()) {
    const std::string routed = totals_.routed.empty() ? "" : text_of(" of %.0f routed", totals_.routed[std::size_t(e)]);
    ImGui::TextDisabled("expert %d (on rank %d): %.0f slots kept%s, all ranks", e, e / (m_.E / m_.P),
                        b.kept[std::size_t(e)], routed.c_str());
  }
  ImGui::EndTooltip();
}

// ---- the dispatch: rank × rank rows ----

void RoutingView::DrawAllToAll(ImDrawList* dl, const Rect& s) const {
  const MoeTotals& t = totals_;
  const int P = m_.P, n = m_.T / P;
  const double h = m_.hidden;
  std::string text = text_of(
      "Diagonal: rows that stay on their rank; sent and computed: the sums across and down. Balanced dispatch "
      "sends (T/EP)\xc2\xb7k\xc2\xb7h\xc2\xb7(EP\xe2\x88\x92"
      "1)/EP\xc2\xb7"
      "4 B to other ranks = %d\xc2\xb7%d\xc2\xb7",
      n, m_.k);
  if (h > 0)
    text += text_of(
        "%g\xc2\xb7(%d/%d)\xc2\xb7"
        "4 = %s per rank; this block sends %.0f rows = %s to other ranks on average, the busiest "
        "rank %.0f rows.",
        h, P - 1, P, human_bytes(t.balanced_to_others * h * 4).c_str(), t.to_others_mean,
        human_bytes(t.to_others_mean * h * 4).c_str(), t.to_others_max);
  else
    text += text_of(
        "h\xc2\xb7(%d/%d)\xc2\xb7"
        "4 = %g rows \xc3\x97 h\xc2\xb7"
        "4 B per rank; this block sends %.0f rows to other ranks on "
        "average, the busiest rank %.0f.",
        P - 1, P, t.balanced_to_others, t.to_others_mean, t.to_others_max);
  const Rect r = section(dl, s, "all-to-all (dispatch): rows, bytes, rank q \xe2\x86\x92 d", text);
  if (P > kMaxDrawnRanks) return caption(dl, s, r.y, "too many ranks to draw (more than 256). " + text);
  const MoeBlock& b = Shown();
  const float line = ImGui::GetTextLineHeight(), left = text_w("from 000") + 10,
              right = text_w(text_of("%.0f", t.slots)) + 12;
  const float side = std::max(8.0f, std::min(r.w - left - right, r.h - 4 * line - 14)), cell = side / float(P),
              x0 = r.x + left, y0 = r.y + line + 4;
  const double top = std::max(1.0, *std::max_element(b.rows.begin(), b.rows.end()));
  // Each cell: its rows and, where h is known and the cell holds two lines, their bytes (rows·h·4).
  const bool bytes_fit = h > 0 && cell >= 2.6f * line && text_w(human_bytes(top * h * 4)) + 6 <= cell;
  for (int q = 0; q < P; ++q)
    for (int d = 0; d < P; ++d) {
      const double v = b.rows[std::size_t(q) * std::size_t(P) + std::size_t(d)];
      const ImVec2 a(x0 + float(d) * cell, y0 + float(q) * cell), z(a.x + cell, a.y + cell);
      dl->AddRectFilled(a, z, heat(v / top));
      if (cell >= 4) dl->AddRect(a, z, kLine);
      const ImU32 ink = light(heat(v / top)) ? kInk : kText;
      if (bytes_fit) {  // the rows in the upper half, their bytes in the lower
        const float mid = (a.y + z.y) / 2;
        centered(dl, a, ImVec2(z.x, mid + 2), ink, text_of("%.0f", v));
        centered(dl, ImVec2(a.x, mid - 2), z, ink, human_bytes(v * h * 4));
      } else {
        centered(dl, a, z, ink, text_of("%.0f", v));
      }
      if (hovering(a, z))
        ImGui::SetTooltip("rank %d \xe2\x86\x92 rank %d: %.0f rows%s%s", q, d, v, q == d ? " (kept on the rank)" : "",
                          h > 0 ? (" = " + human_bytes(v * h * 4)).c_str() : "");
    }
  for (int q = 0; q < P; ++q)  // the diagonal
    dl->AddRect(ImVec2(x0 + float(q) * cell + 1, y0 + float(q) * cell + 1),
                ImVec2(x0 + float(q + 1) * cell - 1, y0 + float(q + 1) * cell - 1), kSeparator, 0, 0, 2.0f);
  AllToAllLabels(dl, r, x0, y0, cell);
  caption(dl, s, y0 + side + 2 * line + 16, text);
}

// The ranks' names and colors, and the sums: rows each rank sent (right), rows its experts computed (below).
void RoutingView::AllToAllLabels(ImDrawList* dl, const Rect& r, float x0, float y0, float cell) const {
  const int P = m_.P;
  const float line = ImGui::GetTextLineHeight(), side = cell * float(P), xs = x0 + side + 8;
  const bool sums_fit = text_w(text_of("%.0f", totals_.slots)) + 4 <= cell;  // the most a column can hold
  for (int p = 0; p < P && cell >= line; ++p) {
    const std::string to = std::to_string(p), from = "from " + to, sent = text_of("%.0f", totals_.sent[std::size_t(p)]),
                      computed = text_of("%.0f", totals_.computed[std::size_t(p)]);
    const float mid = (float(p) + 0.5f) * cell;
    dl->AddText(ImVec2(x0 + mid - text_w(to) / 2, y0 - line - 2), kDim, to.c_str());
    dl->AddText(ImVec2(x0 - 10 - text_w(from), y0 + mid - line / 2), kDim, from.c_str());
    dl->AddText(ImVec2(xs, y0 + mid - line / 2), kText, sent.c_str());
    if (sums_fit) dl->AddText(ImVec2(x0 + mid - text_w(computed) / 2, y0 + side + 8), kText, computed.c_str());
    dl->AddRectFilled(ImVec2(x0 - 7, y0 + float(p) * cell + 1), ImVec2(x0 - 3, y0 + float(p + 1) * cell - 1),
                      rank_color(p));
    dl->AddRectFilled(ImVec2(x0 + float(p) * cell + 1, y0 + side + 3),
                      ImVec2(x0 + float(p + 1) * cell - 1, y0 + side + 6), rank_color(p));
  }
  if (cell >= line) dl->AddText(ImVec2(xs, y0 - line - 2), kDim, "sent");
  if (cell >= line && sums_fit) dl->AddText(ImVec2(x0 - 10 - text_w("computed"), y0 + side + 8), kDim, "computed");
  const char* axis = text_w("to rank d (its experts compute the rows)") > r.w
                         ? "to rank d"
                         : "to rank d (its experts compute the rows)";
  dl->AddText(ImVec2(std::clamp(x0 + (side - text_w(axis)) / 2, r.x, r.x + r.w - text_w(axis)), y0 + side + line + 10),
              kText, axis);
}

// ---- load: kept slots per expert ----

void RoutingView::DrawLoads(ImDrawList* dl, const Rect& s) const {
  const MoeTotals& t = totals_;
  const std::string c =
      m_.capacity_factor > 0
          ? text_of("\xe2\x8c\x88%g\xc2\xb7%d\xc2\xb7%d/%d\xe2\x8c\x89 = ", m_.capacity_factor, m_.k, m_.T / m_.P, m_.E)
          : "";
  const std::string text =
      m_.drop
          ? text_of(
                "Capacity C = \xe2\x8c\x88"
                "c\xc2\xb7k\xc2\xb7(T/EP)/E\xe2\x8c\x89 = %s%d slots per expert and rank "
                "(c: --capacity-factor), so an expert keeps at most C\xc2\xb7"
                "EP = %d over the %d ranks. "
                "Dropped: %.0f of T\xc2\xb7k = %.0f slots (%.1f%%).",
                c.c_str(), m_.C, m_.C * m_.P, m_.P, t.dropped, t.slots, 100 * t.dropped / t.slots)
          : text_of(
                "No capacity (--overflow pad): every expert takes all its tokens (a fixed-size buffer "
                "would be padded to the largest load). Busiest expert: %.2f\xc3\x97 the balanced T\xc2\xb7k/E = %g.",
                t.most_kept / t.mean_load, t.mean_load);
  const Rect r = section(dl, s, "load: kept slots per expert, all ranks", text);
  const MoeBlock& b = Shown();
  const int E = m_.E, P = m_.P, per = E / P;
  const double cap = m_.drop ? double(m_.C) * P : 0, mean = t.mean_load,
               top = 1.04 * std::max({t.most_kept, cap, mean, 1.0});
  const float line = ImGui::GetTextLineHeight(), gap = P > 1 && P <= 64 ? 6.0f : 0.0f,
              left = text_w(text_of("%.0f", top)) + 8;
  const float bw = std::min(48.0f, (r.w - left - gap * float(P - 1)) / float(E)),
              y0 = load_key(dl, r, m_, cap, mean) + line;
  const float y1 = r.y + r.h - 2 * line - 10, x1 = r.x + left + float(E) * bw + gap * float(P - 1);
  auto x = [&](int e) { return r.x + left + float(e) * bw + float(e / per) * gap; };
  auto y = [&](double v) { return y1 - float(v / top) * (y1 - y0); };
  for (int e = 0; e < E; ++e) {
    const double v = b.kept[std::size_t(e)];
    const ImVec2 a(x(e) + (bw >= 6 ? 1 : 0), y(v)), z(x(e) + bw - (bw >= 3 ? 1 : 0), y1);
    dl->AddRectFilled(a, z, rank_color(e / per));
    const std::string value = text_of("%.0f", v), id = std::to_string(e);
    const bool inside =
        m_.drop && y(cap) > a.y - line && y(cap) < a.y - 1 && z.y - a.y > line + 4;  // not over the capacity line
    if (text_w(value) <= bw)
      dl->AddText(ImVec2((a.x + z.x - text_w(value)) / 2, inside ? a.y + 2 : a.y - line),
                  inside && light(rank_color(e / per)) ? kInk : kText, value.c_str());
    if (text_w(id) <= bw) dl->AddText(ImVec2((a.x + z.x - text_w(id)) / 2, y1 + 2), kDim, id.c_str());
    if (hovering(ImVec2(x(e), y0 - line), ImVec2(x(e) + bw, y1)))
      ImGui::SetTooltip("expert %d (on rank %d): %.0f slots kept%s%s", e, e / per, v,
                        m_.drop ? text_of(" of %g", cap).c_str() : "",
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
  if (!m_.drop || std::fabs(y(mean) - y(cap)) >= line) tick(mean, kMean);
  tick(0, kDim);
  if (m_.drop) dl->AddLine(ImVec2(r.x + left, y(cap)), ImVec2(x1, y(cap)), kCapacity, 2.0f), tick(cap, kCapacity);
}

namespace {
std::unique_ptr<Panel> make_routing(const PanelSettings&) { return std::make_unique<RoutingView>(); }
const bool registered =
    register_panel({kRoutingView, "Experts: routing, all-to-all and load per expert", make_routing});
}  // namespace

}  // namespace dtl::viz
