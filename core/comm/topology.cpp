#include "core/comm/topology.h"

#include "core/error.h"

namespace dtl {

GridCoord grid_coord(const GridShape& s, int rank) {
  return {.dp = (rank / s.tp) % s.dp, .tp = rank % s.tp, .pp = rank / (s.dp * s.tp)};
}

int grid_rank(const GridShape& s, const GridCoord& c) { return c.pp * (s.dp * s.tp) + c.dp * s.tp + c.tp; }

Topology::Topology(Comm& world, GridShape shape) : world_(world), shape_(shape) {
  if (shape.dp < 1 || shape.tp < 1 || shape.pp < 1 || shape.size() != world.size())
    throw UsageError("the grid dp=" + std::to_string(shape.dp) + " × tp=" + std::to_string(shape.tp) +
                     " × pp=" + std::to_string(shape.pp) + " needs " + std::to_string(shape.size()) + " ranks, but " +
                     std::to_string(world.size()) + " were started; make dp·tp·pp equal --ranks");
  coord_ = grid_coord(shape, world.rank());
  // One split per group kind: the color is what the members share, the key orders them.
  dp_ = world.split(coord_.pp * shape.tp + coord_.tp, coord_.dp);
  tp_ = world.split(coord_.pp * shape.dp + coord_.dp, coord_.tp);
  pp_ = world.split(coord_.dp * shape.tp + coord_.tp, coord_.pp);
  dp_->set_group_axis(GroupAxis::dp);  // so their events say which axis they belong to
  tp_->set_group_axis(GroupAxis::tp);
  pp_->set_group_axis(GroupAxis::pp);
}

int Topology::next_stage_world_rank() const {
  return is_last_stage() ? -1 : grid_rank(shape_, {coord_.dp, coord_.tp, coord_.pp + 1});
}

int Topology::prev_stage_world_rank() const {
  return is_first_stage() ? -1 : grid_rank(shape_, {coord_.dp, coord_.tp, coord_.pp - 1});
}

std::string Topology::describe() const {
  return "DP(" + std::to_string(shape_.dp) + ")-PP(" + std::to_string(shape_.pp) + ")-TP(" + std::to_string(shape_.tp) +
         ") rank " + std::to_string(world_.rank()) + " (dp " + std::to_string(coord_.dp) + ", pp " +
         std::to_string(coord_.pp) + ", tp " + std::to_string(coord_.tp) + ")";
}

}  // namespace dtl
