// The collectives lab (see labs/collectives/collectives_lab.cpp).
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>

#include "core/theory/collectives.h"
#include "exercises/collectives.h"
#include "labs/lab.h"
#include "labs/option_table.h"

namespace dtl {

// The lab's options, typed (collectives_option_table() binds each flag to its field).
struct CollectivesSettings {
  std::optional<AlgorithmKind> algo = AlgorithmKind::ring;  // --algo: one algorithm, or none for all of them
  CollectiveKind collective =
      CollectiveKind::all_reduce;  // --collective: all_reduce, reduce_scatter, all_gather or broadcast
  ReduceOp op = ReduceOp::sum;
  int slices = 0;    // --slices: the sliced ring's slices per chunk (0: theory::ring_slices)
  int channels = 1;  // --channels: NCCL's channels, the buffer split over C rings or tree pairs
};
const OptionTable<CollectivesSettings>& collectives_option_table();

// Where an algorithm's predicted figures come from, in the curriculum's words: the report's
// "from" column and the lab's view (which names each run's formula) read the same text.
struct CollectiveFormulas {
  std::string bytes, messages, steps, time;
};
CollectiveFormulas collective_formulas(CollectiveKind c, AlgorithmKind a, int P, int channels = 1);
// What one run of `a` building collective `c` costs (the lab builds reduce-scatter and
// all-gather as rings, broadcast as a binomial tree): N = bytes per rank.
theory::CommCost collective_cost(CollectiveKind c, AlgorithmKind a, int P, double N, theory::Link link = {});

// The sliced ring's slices per chunk and the double tree's chunks per half: --slices, or (0)
// about 256 KiB each (theory::ring_slices, theory::double_tree_chunks).
int lab_slices(const CollectivesSettings& s, double N, int P);
int lab_tree_chunks(const CollectivesSettings& s, double N);
// Throws UsageError when --slices is given to a run without a pipelined all-reduce, or
// --channels (above 1) to one without channels: either would change nothing.
void require_slices_apply(const LabConfig& cfg, const CollectivesSettings& s);
// Whether algorithm `a` runs on NCCL's channels here (ring_sliced, double_tree).
bool has_channels(AlgorithmKind a);
// What the lab's run of all-reduce algorithm `a` costs (with the lab's slices and chunks).
theory::CommCost all_reduce_run_cost(const CollectivesSettings& s, AlgorithmKind a, int P, double N, theory::Link link);
// How far a rank's measured bytes may be from the formula: 0 when P and the power of two
// below it divide `count`; else chunks of uneven size shift a rank's share by a few elements.
// With C channels each channel's part is cut so, and the shifts add up over the channels.
double bytes_tolerance(int P, std::size_t count, DType t, int channels = 1);
// The exercise function that runs all-reduce algorithm `a` (S slices, K chunks where it takes
// them) on `channels` (one, or NCCL's channels: Comm::split_channels).
using AllReduceFn = std::function<void(std::span<Comm* const> channels, ex::BufferView, ReduceOp)>;
AllReduceFn all_reduce_fn(AlgorithmKind a, int S, int K);

// Exercise 7, the learner's cost calculator (ex::all_reduce_cost), asked about this run: the
// ring all-reduce of `bytes` per rank on P ranks over the emulated link. Its answer is checked
// against the lab's own α-β model (core/theory), the one the measured rows are compared with.
void ask_the_cost_calculator(int P, double bytes, std::size_t element_size, const LinkSpec& link, Report& rep);

Report run_collectives_lab(Comm& comm, const LabConfig& cfg);
// The report's header words for this run and how to read its times (collectives_report.cpp).
void describe_collectives_setup(const Comm& comm, const LabConfig& cfg, const CollectivesSettings& s, std::size_t count,
                                Report& rep);
int collectives_chunk_grid(const LabConfig& cfg);
// The lab's own view in dtlab-viz: ranks on a circle, chunks moving around them (viz/views/collectives/ring_view.cpp).
inline constexpr ViewKind kRingView{"ring"};
LabInfo collectives_lab_info();

}  // namespace dtl
