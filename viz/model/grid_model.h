// What the topology view draws, plain code so tests can check it (the lab: labs/grid;
// the index math: core/comm/topology.h, Megatron-LM's rank layout).
//
// The grid lab writes meta "grid" = {"dp": D, "tp": T, "pp": P}; a planner may add
// "gpus_per_node" (ranks r / gpus_per_node share a node). grid_model() turns it into one
// cell per world rank with its (dp, tp, pp) coordinate from dtl::grid_coord, and the three
// groups each rank belongs to: its dp group (same tp and pp), its tp group (same dp and pp)
// and its pp group (same dp and tp). Hovering a rank lights up those three groups.
// layout_grid() draws the pipeline stages as columns, the dp replicas stacked inside each,
// and a replica's tp ranks side by side (wrapping when there are many). Malformed meta
// gives an empty model with a message, never an exception.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/comm/topology.h"
#include "viz/model/layout.h"
#include "viz/model/panels.h"
#include "viz/model/trace_data.h"

namespace dtl::viz {

inline const char* const kGridMeta = meta_key_name(MetaKey::grid);
inline const char* const kGpusPerNodeMeta = meta_key_name(MetaKey::gpus_per_node);

struct GridModel {
  GridShape shape;
  int gpus_per_node = 0;  // 0: not known (no node boundaries drawn)
  std::string message;    // why the model is empty ("" when it is not)
  bool empty() const { return !message.empty(); }
  int ranks() const { return empty() ? 0 : shape.size(); }
  int node_of(int rank) const { return gpus_per_node > 0 ? rank / gpus_per_node : 0; }
  GridCoord coord(int rank) const { return grid_coord(shape, rank); }
};

GridModel grid_model(const TraceData& d);  // from meta "grid" (and "gpus_per_node")
// One meta value "{"dp":2,"tp":2,"pp":2}"; `gpus_per_node` as the meta holds it ("" if absent).
GridModel parse_grid_model(std::string_view grid_json, std::string_view gpus_per_node = "");

// The world ranks of `rank`'s group along `axis` (dp, tp or pp), in group-rank order;
// GroupAxis::none gives the rank alone.
std::vector<int> grid_group(const GridShape& s, int rank, GroupAxis axis);

// Bits of a rank's highlight when `hovered` is hovered: which of hovered's groups it is in.
enum GridHighlightBits : std::uint8_t { kInDp = 1, kInTp = 2, kInPp = 4 };
// Per world rank, its bits (all zero when hovered is out of range).
std::vector<std::uint8_t> grid_highlight(const GridShape& s, int hovered);

// "DP(2)-PP(2)-TP(2) rank 5 (dp 0, pp 1, tp 1)", as Topology::describe() says it.
std::string grid_describe(const GridShape& s, int rank);

// ---- layout: pixels ----

struct GridLayout {
  std::vector<Rect> cells;     // per world rank
  std::vector<Rect> stages;    // per pp stage: its column
  std::vector<Rect> replicas;  // per (pp, dp): the box around its tp ranks, index pp·D + dp
  float cell = 0;              // a cell's side
  float header_h = 0;          // above each column: its "stage p" label
};
// Columns for the stages in `area`, each with `header_h` for its label; inside, the D
// replicas stacked, each a box (padding `pad`) of T square cells wrapped into rows.
GridLayout layout_grid(const GridShape& s, Rect area, float header_h, float gap, float pad);
// The rank whose cell holds (x, y), or -1.
int grid_rank_at(const GridLayout& g, float x, float y);

}  // namespace dtl::viz
