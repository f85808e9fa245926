#include "labs/zero/zero_units.h"

#include <algorithm>
#include <string>
#include <utility>

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

CollectiveWords zero_wait_words(const ZeroUnits& units) {
  std::vector<std::pair<int, int>> layers;  // each unit's first and last layer
  for (const ZeroUnit& u : units.units) layers.emplace_back(u.first_layer, u.last_layer);
  return [layers](const Role& r) -> std::string {
    if (r.collective == CollectiveKind::all_reduce && r.bucket >= 0)  // stage 0: DDP's buckets
      return "for the all-reduce of gradient bucket " + std::to_string(r.bucket);
    if (r.block < 0) return {};
    // "layer 3's shards", or "the shards of layers 2–3" for a unit of several layers.
    auto of = [&](const std::string& things) {
      for (const auto& [first, last] : layers)
        if (first == r.block && last > first)
          return "the " + things + " of layers " + std::to_string(first) + "–" + std::to_string(last);
      return "layer " + std::to_string(r.block) + "'s " + things;
    };
    if (r.collective == CollectiveKind::all_gather) return "for the gather of " + of("shards");
    if (r.collective == CollectiveKind::reduce_scatter) return "for the reduce-scatter of " + of("gradients");
    return {};
  };
}

}  // namespace dtl
