// The collectives lab (see labs/collectives/collectives_lab.cpp).
#pragma once

#include <optional>
#include <string>

#include "core/theory/collectives.h"
#include "labs/lab.h"
#include "labs/option_table.h"

namespace dtl {

// The lab's options, typed (collectives_option_table() binds each flag to its field).
struct CollectivesSettings {
  std::optional<AlgorithmKind> algo = AlgorithmKind::ring;  // --algo: one algorithm, or none for all of them
  CollectiveKind collective =
      CollectiveKind::all_reduce;  // --collective: all_reduce, reduce_scatter, all_gather or broadcast
  ReduceOp op = ReduceOp::sum;
};
const OptionTable<CollectivesSettings>& collectives_option_table();

// Where an algorithm's predicted figures come from, in the curriculum's words: the report's
// "from" column and the lab's view (which names each run's formula) read the same text.
struct CollectiveFormulas {
  std::string bytes, messages, steps, time;
};
CollectiveFormulas collective_formulas(CollectiveKind c, AlgorithmKind a, int P);
// What one run of `a` building collective `c` costs (the lab builds reduce-scatter and
// all-gather as rings, broadcast as a binomial tree): N = bytes per rank.
theory::CommCost collective_cost(CollectiveKind c, AlgorithmKind a, int P, double N, theory::Link link = {});

// Exercise 7, the learner's cost calculator (ex::all_reduce_cost), asked about this run: the
// ring all-reduce of `bytes` per rank on P ranks over the emulated link. Its answer is checked
// against the lab's own α-β model (core/theory), the one the measured rows are compared with.
void ask_the_cost_calculator(int P, double bytes, std::size_t element_size, const LinkSpec& link, Report& rep);

Report run_collectives_lab(Comm& comm, const LabConfig& cfg);
int collectives_chunk_grid(const LabConfig& cfg);
// The lab's own view in dtlab-viz: ranks on a circle, chunks moving around them (viz/views/collectives/ring_view.cpp).
inline constexpr ViewKind kRingView{"ring"};
LabInfo collectives_lab_info();

}  // namespace dtl
