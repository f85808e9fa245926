#include "viz/model/grid_model.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "core/trace/trace_limits.h"

namespace dtl::viz {

namespace {

constexpr int kMaxAxis = 4096;  // the grid lab's --dp/--tp/--pp limit

int axis_size(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return 0;
  const std::int64_t v = it->get<std::int64_t>();
  return v >= 1 && v <= kMaxAxis ? int(v) : 0;
}

GridModel refuse(std::string why) {
  GridModel m;
  m.message = std::move(why);
  return m;
}

}  // namespace

GridModel parse_grid_model(std::string_view grid_json, std::string_view gpus_per_node) {
  const nlohmann::json j = nlohmann::json::parse(grid_json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return refuse("the trace's meta \"grid\" is not a JSON object like {\"dp\":2,\"tp\":2,\"pp\":2}");
  GridModel m;
  m.shape = {axis_size(j, "dp"), axis_size(j, "tp"), axis_size(j, "pp")};
  if (!m.shape.dp || !m.shape.tp || !m.shape.pp)
    return refuse("the trace's meta \"grid\" needs \"dp\", \"tp\" and \"pp\", each an integer in [1, " +
                  std::to_string(kMaxAxis) + "]");
  if (std::int64_t(m.shape.dp) * m.shape.tp * m.shape.pp > trace_limits::kMaxRanks)
    return refuse("the grid dp·tp·pp has more than " + std::to_string(trace_limits::kMaxRanks) + " ranks");
  int g = 0;
  const auto [end, ec] = std::from_chars(gpus_per_node.data(), gpus_per_node.data() + gpus_per_node.size(), g);
  if (ec == std::errc() && end == gpus_per_node.data() + gpus_per_node.size() && g >= 1) m.gpus_per_node = g;
  return m;
}

GridModel grid_model(const TraceData& d) {
  const auto it = d.meta.find(kGridMeta);
  if (it == d.meta.end())
    return refuse("this trace has no meta \"grid\": the topology view draws runs of the grid lab (dtlab run grid)");
  const auto g = d.meta.find(kGpusPerNodeMeta);
  GridModel m = parse_grid_model(it->second, g == d.meta.end() ? std::string_view() : std::string_view(g->second));
  if (!m.empty() && d.ranks > 0 && m.shape.size() != d.ranks)
    return refuse("the meta \"grid\" has dp·tp·pp = " + std::to_string(m.shape.size()) + " ranks, the trace " +
                  std::to_string(d.ranks));
  return m;
}

std::vector<int> grid_group(const GridShape& s, int rank, GroupAxis axis) {
  const GridCoord c = grid_coord(s, rank);
  std::vector<int> out;
  const int n = axis == GroupAxis::dp ? s.dp : axis == GroupAxis::tp ? s.tp : axis == GroupAxis::pp ? s.pp : 1;
  for (int i = 0; i < n; ++i) {
    GridCoord m = c;
    if (axis == GroupAxis::dp)
      m.dp = i;
    else if (axis == GroupAxis::tp)
      m.tp = i;
    else if (axis == GroupAxis::pp)
      m.pp = i;
    out.push_back(grid_rank(s, m));
  }
  return out;
}

std::vector<std::uint8_t> grid_highlight(const GridShape& s, int hovered) {
  std::vector<std::uint8_t> bits(std::size_t(std::max(0, s.size())), 0);
  if (hovered < 0 || hovered >= s.size()) return bits;
  for (int r : grid_group(s, hovered, GroupAxis::dp)) bits[std::size_t(r)] |= kInDp;
  for (int r : grid_group(s, hovered, GroupAxis::tp)) bits[std::size_t(r)] |= kInTp;
  for (int r : grid_group(s, hovered, GroupAxis::pp)) bits[std::size_t(r)] |= kInPp;
  return bits;
}

std::string grid_describe(const GridShape& s, int rank) {
  const GridCoord c = grid_coord(s, rank);
  return "DP(" + std::to_string(s.dp) + ")-PP(" + std::to_string(s.pp) + ")-TP(" + std::to_string(s.tp) + ") rank " +
         std::to_string(rank) + " (dp " + std::to_string(c.dp) + ", pp " + std::to_string(c.pp) + ", tp " +
         std::to_string(c.tp) + ")";
}

GridLayout layout_grid(const GridShape& s, Rect area, float header_h, float gap, float pad) {
  GridLayout g;
  if (s.size() <= 0) return g;
  g.header_h = header_h;
  const float col_w = std::max(1.0f, (area.w - gap * float(s.pp - 1)) / float(s.pp));
  const float box_h = std::max(1.0f, (area.h - header_h - gap * float(s.dp - 1)) / float(s.dp));
  const float cg = std::max(1.0f, pad / 2);  // between cells
  // The T cells of a replica in rows of k: the k giving the largest square cells.
  int per_row = 1;
  for (int k = 1; k <= s.tp; ++k) {
    const int rows = (s.tp + k - 1) / k;
    const float side = std::min((col_w - 2 * pad - cg * float(k - 1)) / float(k),
                                (box_h - 2 * pad - cg * float(rows - 1)) / float(rows));
    if (side > g.cell) g.cell = side, per_row = k;
  }
  g.cell = std::clamp(g.cell, 1.0f, 96.0f);
  const int rows = (s.tp + per_row - 1) / per_row;
  const float inner_w = float(per_row) * g.cell + cg * float(per_row - 1),
              inner_h = float(rows) * g.cell + cg * float(rows - 1);
  const float rep_w = inner_w + 2 * pad, rep_h = inner_h + 2 * pad;
  g.cells.resize(std::size_t(s.size()));
  g.replicas.resize(std::size_t(s.pp * s.dp));
  for (int p = 0; p < s.pp; ++p) {
    const float x = area.x + float(p) * (col_w + gap);
    g.stages.push_back({x, area.y, col_w, header_h + float(s.dp) * rep_h + gap * float(s.dp - 1)});
    for (int d = 0; d < s.dp; ++d) {
      const Rect box{x + (col_w - rep_w) / 2, area.y + header_h + float(d) * (rep_h + gap), rep_w, rep_h};
      g.replicas[std::size_t(p * s.dp + d)] = box;
      for (int t = 0; t < s.tp; ++t) {
        const int row = t / per_row, col = t % per_row;
        g.cells[std::size_t(grid_rank(s, {d, t, p}))] = {box.x + pad + float(col) * (g.cell + cg),
                                                         box.y + pad + float(row) * (g.cell + cg), g.cell, g.cell};
      }
    }
  }
  return g;
}

int grid_rank_at(const GridLayout& g, float x, float y) {
  for (std::size_t r = 0; r < g.cells.size(); ++r) {
    const Rect& c = g.cells[r];
    if (x >= c.x && x < c.x + c.w && y >= c.y && y < c.y + c.h) return int(r);
  }
  return -1;
}

}  // namespace dtl::viz
