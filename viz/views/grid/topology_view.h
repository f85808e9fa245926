// The grid lab's view (topology_view.cpp), declared here so tests can read what a frame lit.
#pragma once

#include <array>
#include <vector>

#include "viz/app/views.h"
#include "viz/model/grid_model.h"

namespace dtl::viz {

// The grid of ranks (viz/model/grid_model): pipeline stages as columns, dp replicas stacked
// in each, a replica's tp ranks side by side, labelled with their world rank. Hovering a
// rank (or --highlight-rank) outlines its dp, tp and pp groups in the axis colors.
struct TopologyView final : Panel {
  int pinned = -1;  // a rank highlighted without the pointer (--highlight-rank), -1: none
  std::vector<int>
      stepped_group;  // the ranks of the collective at the cursor, as the last frame lit them (tests read it)
  void Draw(const Frame& f) override;
  void Restart() override { key_ = {}; }

 private:
  GridModel model_;
  std::array<std::size_t, 3> key_{};  // the trace (address, grid meta's size, gpus_per_node's size)
};

}  // namespace dtl::viz
