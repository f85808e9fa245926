// Topology: the dp × tp × pp grid, built once, handing out every process group.
//
// Rank layout follows Megatron-LM: tensor-parallel ranks are neighbours (fastest
// varying, so a TP group sits inside one node's NVLink domain), then data-parallel,
// then pipeline stages:
//     rank = pp_rank · (dp · tp) + dp_rank · tp + tp_rank
// Example: dp=2, tp=2, pp=2 → rank 5 is (pp 1, dp 0, tp 1): "DP(2)-PP(2)-TP(2) rank 5".
#pragma once

#include <memory>
#include <string>

#include "core/comm/comm.h"

namespace dtl {

struct GridShape {
  int dp = 1, tp = 1, pp = 1;
  int size() const { return dp * tp * pp; }
};

struct GridCoord {
  int dp = 0, tp = 0, pp = 0;
};

// Pure index math, usable without a Comm (tests, the planner, the visualizer).
GridCoord grid_coord(const GridShape& shape, int rank);
int grid_rank(const GridShape& shape, const GridCoord& c);

class Topology {
 public:
  // Collective over `world`; throws UsageError if dp·tp·pp != world.size().
  Topology(Comm& world, GridShape shape);

  const GridShape& shape() const { return shape_; }
  const GridCoord& coord() const { return coord_; }
  Comm& world() { return world_; }
  Comm& dp_group() { return *dp_; }  // same (tp, pp), varying dp: gradient all-reduce
  Comm& tp_group() { return *tp_; }  // same (dp, pp), varying tp: Megatron f/g all-reduces
  Comm& pp_group() { return *pp_; }  // same (dp, tp), varying pp: stage-to-stage sends

  bool is_first_stage() const { return coord_.pp == 0; }
  bool is_last_stage() const { return coord_.pp == shape_.pp - 1; }
  // The neighbouring pipeline stages, by the two numberings a lab may need: the rank in
  // world() (what send/recv on the world communicator take) and the rank in pp_group()
  // (which is simply the stage index). -1 past either end of the pipeline.
  int next_stage_world_rank() const;
  int prev_stage_world_rank() const;
  int next_stage_group_rank() const { return is_last_stage() ? -1 : coord_.pp + 1; }
  int prev_stage_group_rank() const { return is_first_stage() ? -1 : coord_.pp - 1; }

  std::string describe() const;  // "DP(2)-PP(2)-TP(2) rank 5 (dp 0, pp 1, tp 1)"

 private:
  Comm& world_;
  GridShape shape_;
  GridCoord coord_;
  std::unique_ptr<Comm> dp_, tp_, pp_;
};

}  // namespace dtl
