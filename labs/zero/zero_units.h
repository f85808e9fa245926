// ZeRO's sharding units: the model's layers grouped `layers_per_unit` at a time (FSDP's
// wrapping policy: one FlatParameter per unit), each unit sharded over the N ranks on its
// own (exercises/zero.h: chunk = ceil(n / N), padding on the last ranks). Three buffers
// are laid out from the units:
//
//   the model's flat buffer   unit u at units[u].range              (unpadded, as ParamLayout)
//   a padded full buffer      unit u at [padded_begin, + N·chunk)   (stages 1, 2: params; stage 1: grads)
//   this rank's shard buffer  its chunk of unit u at [shard_begin, + chunk)
//
// Everything a reduce-scatter or all-gather moves is a whole padded unit, so the bytes on
// the wire are N·chunk per unit, and the padding (≤ N − 1 elements per unit) is counted.
#pragma once

#include <cstddef>
#include <vector>

#include "core/comm/wait_words.h"
#include "exercises/zero.h"
#include "labs/train/param_layout.h"

namespace dtl {

struct ZeroUnit {
  int first_layer = 0, last_layer = 0;
  Range range;                   // the unit's elements in the model's flat buffer
  std::size_t chunk = 0;         // every rank's piece, padding included
  std::size_t padded_begin = 0;  // where the unit starts in a padded full buffer
  std::size_t shard_begin = 0;   // where this rank's chunk starts in its shard buffer
  ex::ShardRange own;            // this rank's real elements, relative to the unit's start
  std::size_t padded_numel(int world) const { return chunk * std::size_t(world); }
};

struct ZeroUnits {
  std::vector<ZeroUnit> units;  // in forward order
  int world = 1;
  std::size_t numel = 0;                                        // Ψ: the model's parameters
  std::size_t padded_numel = 0;                                 // Σ N·chunk: a padded full buffer
  std::size_t shard_numel = 0;                                  // Σ chunk: one rank's shard buffer, padding included
  std::size_t own_numel = 0;                                    // this rank's real elements
  std::size_t padding() const { return padded_numel - numel; }  // over all ranks
  const ZeroUnit& unit_of_layer(int layer) const;
};

// The units of `layout` for rank `rank` of `world`, `layers_per_unit` layers each (the last
// unit may hold fewer). UsageError when layers_per_unit < 1.
ZeroUnits make_zero_units(const ParamLayout& layout, int layers_per_unit, int rank, int world);

// What a ZeRO rank waits for, in the lab's words, for the watchdog (core/comm/wait_words.h):
// "for the gather of layer 3's shards", "for the reduce-scatter of layer 3's gradients". The
// unit's collectives carry its first layer (ScopedCollectiveRole's block), stage 0's its bucket.
CollectiveWords zero_wait_words(const ZeroUnits& units);

}  // namespace dtl
