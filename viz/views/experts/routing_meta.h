// The experts lab's routing for its view (routing_view.cpp): the meta "moe_routing" that
// rank 0 writes after each of the first training steps (labs/experts/experts_measure.cpp,
// publish_routing), read and checked, every count in range before the view draws it; the
// sums its captions quote; how tokens and experts fall onto whole pixels, and the cells there.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "viz/model/trace_data.h"

namespace dtl::viz {

// One MoE block's routing over every rank.
struct MoeBlock {
  std::vector<int> choice;   // [T·k]: slot t·k + j = token t's j-th expert, −1 dropped (rank 0's tokens first)
  std::vector<int> routed;   // [T·k]: the same before capacity, never −1; empty in older traces
  std::vector<double> rows;  // [P·P]: rows[q·P + d] = rows rank q sent to rank d in the dispatch
  std::vector<double> kept;  // [E]: kept slots per expert, all ranks
};

struct MoeRouting {
  int E = 0, P = 0, T = 0, k = 0;  // experts, ranks (EP), tokens (all ranks), top-k
  int C = 0;                       // capacity: slots per expert and rank
  bool drop = true;                // false: no capacity, every expert takes its whole load
  double hidden = 0;               // h (0: not known)
  double capacity_factor = 0;      // c of C = ⌈c·k·(T/EP)/E⌉ (0: not known)
  std::vector<MoeBlock> blocks;    // the shown training step's, at most 64 (the lab's --layers)
  struct Step {
    int step = 0;  // the training step (0: the first)
    std::vector<MoeBlock> blocks;
  };
  std::vector<Step> steps;  // every step the lab published (its first 32 at most), in order
  std::string message;      // why there is nothing to draw (no blocks)
};

// A block's rows and slots summed: the view's sums and captions.
struct MoeTotals {
  std::vector<double> sent, computed;  // per rank: dispatch rows it sent (own included), rows its experts computed
  double to_others_mean = 0, to_others_max = 0;  // rows a rank sent to the other ranks
  double balanced_to_others = 0;                 // what balanced routing sends there: (T/EP)·k·(EP−1)/EP
  double slots = 0, dropped = 0;                 // T·k, and the slots dropped over capacity
  double mean_load = 0, most_kept = 0;           // T·k/E, and the busiest expert's kept slots
  std::vector<double> routed;                    // per expert: slots routed to it before capacity (empty: not known)
};
MoeTotals moe_totals(const MoeRouting& m, const MoeBlock& b);

// Items (tokens, experts) onto whole pixels for the view: `per` items a bin where they outnumber the pixels.
struct Bins {
  int per = 1, n = 0;  // items per bin, bins
  float px = 1;        // pixels per bin, at most max_px
};
Bins bins(int items, float pixels, float max_px);

// A block's slots on the routing picture: tokens binned into rows, experts into columns.
struct MoeCells {
  static constexpr std::uint8_t kDropped = 0x80;  // a slot dropped over capacity went to this column's expert
  std::vector<std::uint8_t> cells;   // [rows·columns]: 1 + the best choice rank kept there (0: none), | kDropped
  std::vector<std::uint64_t> drops;  // [rows]: bit j where a j-th choice was dropped; only without "routed"
};
MoeCells moe_cells(const MoeRouting& m, const MoeBlock& b, const Bins& rows, const Bins& columns);

// The meta's JSON; no blocks and a message naming the problem when it is malformed. The
// blocks shown are the first published step's (show_step picks another).
MoeRouting parse_moe_routing(const std::string& json);
// The published step to show at a training step: the latest at or before it (else the
// first); returns its index in m.steps and copies its blocks into m.blocks.
std::size_t show_step(MoeRouting& m, int training_step);
// The training step running at `time_ns` on rank 0: its "training step" span (the compute
// span the lab numbers with its step) that began last at or before then; -1 before the first.
int training_step_at(const TraceData& d, std::int64_t time_ns);
// h and c from the run's options in the trace (meta "hidden", "capacity-factor"); without
// them, h from the report's row "a2a.dispatch_bytes", predicted T/EP·k·h·4.
void moe_read_run_options(const TraceData& d, MoeRouting& m);

}  // namespace dtl::viz
