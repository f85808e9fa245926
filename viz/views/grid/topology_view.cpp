// Topology view (grid lab): the dp × tp × pp grid of ranks, Megatron-LM's layout
// (core/comm/topology.h: rank = pp·(dp·tp) + dp·tp + tp). A column per pipeline stage, the
// data-parallel replicas stacked in it, each replica's tensor-parallel ranks side by side,
// every cell labelled with its world rank. Hovering a rank (or --highlight-rank N) outlines
// the three groups it belongs to in the axis colors the timeline uses for their transfers:
// its dp group (gradient all-reduce), tp group (Megatron's f and g) and pp group (stage-to-
// stage sends). With meta "gpus_per_node", node boundaries are drawn dashed. Geometry and
// groups are viz/model/grid_model.
#include "viz/views/grid/topology_view.h"

#include <algorithm>
#include <cstdio>

#include "labs/grid/grid_lab.h"
#include "viz/model/text_fit.h"

namespace dtl::viz {

namespace {

constexpr ImU32 kCell = IM_COL32(70, 72, 84, 255), kHovered = IM_COL32(235, 235, 240, 255),
                kText = IM_COL32(225, 225, 230, 255), kInk = IM_COL32(15, 15, 20, 255),
                kBox = IM_COL32(120, 120, 135, 160), kNode = IM_COL32(200, 200, 210, 140),
                kDim = IM_COL32(160, 160, 170, 255);

ImVec2 lo(const Rect& r, float inset = 0) { return ImVec2(r.x + inset, r.y + inset); }
ImVec2 hi(const Rect& r, float inset = 0) { return ImVec2(r.x + r.w - inset, r.y + r.h - inset); }

std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size() && i < 16; ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  if (ranks.size() > 16) out += ", ... (" + std::to_string(ranks.size()) + " ranks)";
  return out;
}

void legend(const GridModel& m) {
  const GridShape& s = m.shape;
  ImGui::Text(
      "DP(%d) \xc3\x97 TP(%d) \xc3\x97 PP(%d) = %d ranks \xc2\xb7 rank = pp\xc2\xb7(dp\xc2\xb7tp) + dp\xc2\xb7tp + "
      "tp%s",
      s.dp, s.tp, s.pp, s.size(),
      m.gpus_per_node ? (" \xc2\xb7 " + std::to_string(m.gpus_per_node) + " GPUs per node (dashed)").c_str() : "");
  legend_swatch(axis_color(GroupAxis::dp), "dp group (same tp, pp): gradients");
  legend_swatch(axis_color(GroupAxis::tp), "tp group (same dp, pp): f, g");
  legend_swatch(axis_color(GroupAxis::pp), "pp group (same dp, tp): stage sends");
  ImGui::NewLine();
}

void tooltip(const GridModel& m, int rank) {
  ImGui::BeginTooltip();
  ImGui::TextUnformatted(grid_describe(m.shape, rank).c_str());
  if (m.gpus_per_node) ImGui::Text("node %d", m.node_of(rank));
  ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(axis_color(GroupAxis::dp)), "dp group: %s",
                     rank_list(grid_group(m.shape, rank, GroupAxis::dp)).c_str());
  ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(axis_color(GroupAxis::tp)), "tp group: %s",
                     rank_list(grid_group(m.shape, rank, GroupAxis::tp)).c_str());
  ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(axis_color(GroupAxis::pp)), "pp group: %s",
                     rank_list(grid_group(m.shape, rank, GroupAxis::pp)).c_str());
  ImGui::EndTooltip();
}

// Nested outlines inside the cell, one per group of the hovered rank that holds it.
void draw_cell(ImDrawList* dl, const Rect& c, int rank, std::uint8_t bits, bool hovered) {
  dl->AddRectFilled(lo(c), hi(c), hovered ? kHovered : kCell, 3.0f);
  const float t = std::clamp(c.w / 14, 1.0f, 3.0f);
  const std::pair<std::uint8_t, GroupAxis> rings[] = {
      {kInDp, GroupAxis::dp}, {kInTp, GroupAxis::tp}, {kInPp, GroupAxis::pp}};
  float inset = t / 2;
  for (const auto& [bit, axis] : rings) {
    if (!(bits & bit)) continue;
    if (c.w > 2 * inset + 2) dl->AddRect(lo(c, inset), hi(c, inset), axis_color(axis), 3.0f, 0, t);
    inset += t + 1;
  }
  char text[16];
  std::snprintf(text, sizeof text, "%d", rank);
  const ImVec2 ts = ImGui::CalcTextSize(text);
  if (ts.x + 4 <= c.w && ts.y <= c.h)
    dl->AddText(ImVec2(c.x + (c.w - ts.x) / 2, c.y + (c.h - ts.y) / 2), hovered ? kInk : kText, text);
}

void dashed_rect(ImDrawList* dl, ImVec2 a, ImVec2 b, ImU32 col) {
  for (float x = a.x; x < b.x; x += 8) {
    dl->AddLine(ImVec2(x, a.y), ImVec2(std::min(x + 4, b.x), a.y), col);
    dl->AddLine(ImVec2(x, b.y), ImVec2(std::min(x + 4, b.x), b.y), col);
  }
  for (float y = a.y; y < b.y; y += 8) {
    dl->AddLine(ImVec2(a.x, y), ImVec2(a.x, std::min(y + 4, b.y)), col);
    dl->AddLine(ImVec2(b.x, y), ImVec2(b.x, std::min(y + 4, b.y)), col);
  }
}

// Each node's cells within one stage column, boxed (ranks of a node are consecutive).
void draw_nodes(ImDrawList* dl, const GridModel& m, const GridLayout& g, float pad) {
  const int per_stage = m.shape.dp * m.shape.tp;
  for (int p = 0; p < m.shape.pp; ++p)
    for (int r = p * per_stage; r < (p + 1) * per_stage;) {
      const int node = m.node_of(r);
      ImVec2 a(1e9f, 1e9f), b(-1e9f, -1e9f);
      for (; r < (p + 1) * per_stage && m.node_of(r) == node; ++r) {
        const Rect& c = g.cells[std::size_t(r)];
        a = ImVec2(std::min(a.x, c.x), std::min(a.y, c.y)),
        b = ImVec2(std::max(b.x, c.x + c.w), std::max(b.y, c.y + c.h));
      }
      const float out = pad + 4;  // outside the replica boxes (12 px apart)
      dashed_rect(dl, ImVec2(a.x - out, a.y - out), ImVec2(b.x + out, b.y + out), kNode);
      const std::string name = "node " + std::to_string(node);
      if (b.y - a.y > 2 * ImGui::GetTextLineHeight())
        dl->AddText(ImVec2(b.x + out + 4, a.y - out), kNode, name.c_str());
    }
}

// The pp group as the activations travel: an arrow from each stage's cell to the next one's.
void draw_pp_path(ImDrawList* dl, const GridShape& s, const GridLayout& g, int rank) {
  const std::vector<int> path = grid_group(s, rank, GroupAxis::pp);
  const ImU32 col = axis_color(GroupAxis::pp);
  for (std::size_t i = 1; i < path.size(); ++i) {
    const Rect &a = g.cells[std::size_t(path[i - 1])], &b = g.cells[std::size_t(path[i])];
    const ImVec2 from(a.x + a.w + 2, a.y + a.h / 4), to(b.x - 3, b.y + b.h / 4);  // above the replicas' names
    dl->AddLine(from, to, col, 1.5f);
    dl->AddTriangleFilled(to, ImVec2(to.x - 7, to.y - 4), ImVec2(to.x - 7, to.y + 4), col);
  }
}

// The collective at the cursor (a run stepped by collective): its group, lit in its axis's
// color, and what it is in words under the legend.
std::vector<int> cursor_group(const Frame& f, const GridModel& m, GroupAxis& axis, std::string& what) {
  const std::vector<Event>& steps = f.session.steps();
  if (f.session.unit() != StepUnit::collectives || f.cursor == 0 || f.cursor > steps.size()) return {};
  const Event& e = steps[f.cursor - 1];
  if (e.rank < 0 || e.rank >= m.ranks()) return {};
  axis = e.axis;
  std::vector<int> group;
  if (axis == GroupAxis::dp || axis == GroupAxis::tp || axis == GroupAxis::pp) {
    group = grid_group(m.shape, e.rank, axis);
  } else {
    for (int r = 0; r < m.ranks(); ++r) group.push_back(r);  // the world's
  }
  const std::string name = f.session.data().label(e.label);
  what = "collective " + std::to_string(f.cursor) + ": " + (name.empty() ? std::string("collective") : name) + " of " +
         human_bytes(double(e.bytes)) + " on " +
         (axis == GroupAxis::none ? std::string("every rank") : std::string(group_axis_name(axis)) + " group") + " {" +
         rank_list(group) + "}";
  return group;
}

void light_group(ImDrawList* dl, const GridLayout& g, const std::vector<int>& group, GroupAxis axis) {
  const ImU32 col = axis == GroupAxis::none ? IM_COL32(230, 200, 120, 255) : axis_color(axis);
  const ImVec4 c = ImGui::ColorConvertU32ToFloat4(col);
  const ImU32 fill = ImGui::ColorConvertFloat4ToU32(ImVec4(c.x, c.y, c.z, 0.35f));
  for (int r : group) {
    if (r < 0 || r >= int(g.cells.size())) continue;
    const Rect& cell = g.cells[std::size_t(r)];
    dl->AddRectFilled(lo(cell), hi(cell), fill, 3.0f);
    dl->AddRect(lo(cell, -2), hi(cell, -2), col, 4.0f, 0, 3.0f);
  }
}

}  // namespace

void TopologyView::Draw(const Frame& f) {
  const TraceData& d = f.session.data();
  const auto grid = d.meta.find(kGridMeta), gpn = d.meta.find(kGpusPerNodeMeta);
  const std::array<std::size_t, 3> key = {reinterpret_cast<std::size_t>(&d),
                                          grid == d.meta.end() ? 0 : grid->second.size() + 1,
                                          gpn == d.meta.end() ? 0 : gpn->second.size() + 1};
  if (key != key_) model_ = grid_model(d), key_ = key;
  if (model_.empty()) {
    ImGui::TextWrapped("%s", clip_text(model_.message).c_str());  // (may quote the trace)
    return;
  }
  legend(model_);
  GroupAxis stepped_axis = GroupAxis::none;
  std::string stepped_what;
  stepped_group = cursor_group(f, model_, stepped_axis, stepped_what);
  if (!stepped_group.empty()) ImGui::TextColored(ImVec4(0.95f, 0.85f, 0.55f, 1), "%s", clip_text(stepped_what).c_str());
  const ImVec2 start = ImGui::GetCursorScreenPos(), avail = ImGui::GetContentRegionAvail();
  const float line = ImGui::GetTextLineHeight(), pad = 6;
  const Rect area{start.x + 4, start.y + 2, std::max(40.0f, avail.x - 8), std::max(40.0f, avail.y - 6)};
  const GridLayout g = layout_grid(model_.shape, area, line + 6, 12, pad);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const int under = ImGui::IsWindowHovered() ? grid_rank_at(g, mouse.x, mouse.y) : -1;
  const int lit = under >= 0 ? under : pinned < model_.ranks() ? pinned : -1;
  const std::vector<std::uint8_t> bits = grid_highlight(model_.shape, lit);
  for (int p = 0; p < model_.shape.pp; ++p) {
    const Rect& col = g.stages[std::size_t(p)];
    char text[32];
    std::snprintf(text, sizeof text, "stage %d", p);
    dl->AddText(ImVec2(col.x + (col.w - ImGui::CalcTextSize(text).x) / 2, col.y), kText, text);
    for (int r = 0; r < model_.shape.dp; ++r) {
      const Rect& box = g.replicas[std::size_t(p * model_.shape.dp + r)];
      const bool tp_group = lit >= 0 && lit / model_.shape.tp == p * model_.shape.dp + r;
      dl->AddRect(lo(box), hi(box), tp_group ? axis_color(GroupAxis::tp) : kBox, 4.0f, 0, tp_group ? 2.0f : 1.0f);
      std::snprintf(text, sizeof text, "replica %d", r);
      const ImVec2 ts = ImGui::CalcTextSize(text);
      if (box.x - col.x >= ts.x + 6 && box.h >= ts.y)
        dl->AddText(ImVec2(box.x - ts.x - 6, box.y + (box.h - ts.y) / 2), kDim, text);
    }
  }
  if (model_.gpus_per_node) draw_nodes(dl, model_, g, pad);
  for (int r = 0; r < model_.ranks(); ++r) draw_cell(dl, g.cells[std::size_t(r)], r, bits[std::size_t(r)], r == lit);
  light_group(dl, g, stepped_group, stepped_axis);
  if (lit >= 0) draw_pp_path(dl, model_.shape, g, lit);
  if (under >= 0)
    tooltip(model_, under);
  else if (lit >= 0) {  // pinned: say what is lit under the grid, below its column
    const Rect& col = g.stages[std::size_t(model_.coord(lit).pp)];
    const bool right_half = col.x + col.w / 2 > area.x + area.w / 2;
    ImGui::SetNextWindowPos(ImVec2(right_half ? col.x + col.w : col.x, col.y + col.h + 10), 0,
                            ImVec2(right_half ? 1.0f : 0.0f, 0.0f));
    tooltip(model_, lit);
  }
  ImGui::Dummy(avail);
}

namespace {
std::unique_ptr<Panel> make_topology(const PanelSettings& s) {
  auto t = std::make_unique<TopologyView>();
  t->pinned = std::stoi(s.option("highlight-rank", "-1"));  // (a whole number: the option's check)
  return t;
}
const bool registered = register_panel(
    {kTopologyView,
     "Topology: the dp \xc3\x97 tp \xc3\x97 pp grid of ranks and their groups",
     make_topology,
     {{"highlight-rank", ViewOption::Kind::rank,
       "The topology view lights this rank's dp, tp and pp groups as if it were hovered (screenshots)"}}});
}  // namespace

}  // namespace dtl::viz
