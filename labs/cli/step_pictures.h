// Pictures `dtlab run LAB --step` draws beside the collectives it steps through, each from the
// run's events and metadata (the viewer reads the same), each fitting `width` columns:
//
//   ZeRO-3's shards   a row per rank, a column per sharding unit (named by its first layer),
//                     each cell the slices of that unit's parameters the rank holds: its own
//                     (".1.." on rank 1 of 4) or all of them while gathered ("0123"); a unit is
//                     gathered from its all-gather's end to the free of its gather buffer
//   MoE routing       per block of the step the experts lab published (meta moe_routing): a row
//                     per rank's tokens, a column per expert under the rank that holds it, each
//                     cell the slots routed there (tokens → experts → ranks), and the drops
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/trace/trace.h"

namespace dtl::cli {

// `line` broken at spaces to `width` columns; continuation lines indented 4 more than its own.
// Glued spaces (glued()) never break: they print as spaces.
void print_wrapped(std::ostream& os, const std::string& line, std::size_t width);
// `s` with its spaces glued (U+00A0), so a number stays with its unit: "2.13 MiB", "rank 0".
std::string glued(const std::string& s);

class ShardPicture {
 public:
  // Prints the picture when a ZeRO-3 phase runs and the picture changed since the last call.
  void print_if_changed(std::ostream& os, const std::vector<Event>& events, int ranks, const Trace& trace,
                        std::size_t width);

 private:
  std::vector<std::string> last_;
};

class RoutingPicture {
 public:
  // Prints the newest published step's routing, once.
  void print_if_new(std::ostream& os, const Trace& trace, std::size_t width);

 private:
  std::size_t steps_shown_ = 0;
  bool legend_shown_ = false;
};

}  // namespace dtl::cli
