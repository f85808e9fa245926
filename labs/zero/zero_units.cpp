#include "labs/zero/zero_units.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace dtl {

const ZeroUnit& ZeroUnits::unit_of_layer(int layer) const {
  for (const ZeroUnit& u : units)
    if (layer >= u.first_layer && layer <= u.last_layer) return u;
  throw Error("layer " + std::to_string(layer) + " is in no ZeRO unit");
}

ZeroUnits make_zero_units(const ParamLayout& layout, int layers_per_unit, int rank, int world) {
  if (layers_per_unit < 1) throw UsageError("--unit must be at least 1 layer per sharding unit");
  ZeroUnits z;
  z.world = world;
  z.numel = layout.numel();
  for (int first = layout.first_layer(); first <= layout.last_layer(); first += layers_per_unit) {
    ZeroUnit u;
    u.first_layer = first;
    u.last_layer = std::min(layout.last_layer(), first + layers_per_unit - 1);
    u.range = layout.layers_range(u.first_layer, u.last_layer);
    u.own = ex::shard_range(u.range.size(), rank, world);  // the learner's exercise 13
    u.chunk = u.own.chunk;
    u.padded_begin = z.padded_numel;
    u.shard_begin = z.shard_numel;
    z.padded_numel += u.padded_numel(world);
    z.shard_numel += u.chunk;
    z.own_numel += u.own.end - u.own.begin;
    z.units.push_back(u);
  }
  return z;
}

}  // namespace dtl
