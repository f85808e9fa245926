// The collectives lab's transfers cut into its runs, for its view (ring_view.cpp).
//
// The lab marks where each run of an algorithm begins on every rank: an instant whose
// label's role names the collective, the algorithm and the part (a timed run, or a check).
// A transfer belongs to the latest run its receiver had begun. Each run starts from every
// rank holding its own data again (the lab refills the buffers), so the view draws a run's
// picture and counts its bytes afresh, beside that run's own formula: a naive run is shown
// as naive, with (P-1)·N; the identity checks after the timed runs are named as checks.
// A trace without marks (an older one) is one run of unknown kind.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/trace/chunk_state.h"
#include "core/trace/vocab.h"
#include "viz/model/trace_data.h"

namespace dtl::viz {

// What a cell of the chunk picture says for a run of this collective.
enum class CellMeaning {
  contributions,  // all-reduce, reduce-scatter: how many ranks' data chunk c holds
  owner_chunk,    // all-gather: whether the rank holds chunk c from its owner, rank c
  root_data,      // broadcast: whether it holds the root's (rank 0's) data
};

struct CollectiveRun {
  std::size_t first = 0, end = 0;  // its transfers: [first, end) of the landing order
  std::string name;                // the mark's label: "ring all_reduce", "identity check: ..."
  Role role;                       // collective, algorithm, part (timed or check); empty: unknown
  int repeat = 1, repeats = 1;     // the k-th of n runs of this name (a timed run's repetitions)
  CellMeaning cells = CellMeaning::contributions;
};

// The runs of `transfers` (landing order), in order; runs without a transfer are left out.
std::vector<CollectiveRun> collective_runs(const TraceData& d, const std::vector<Event>& transfers);
// The run the cursor is in: the one holding transfer cursor-1 (cursor 0: the first).
std::size_t run_at(const std::vector<CollectiveRun>& runs, std::size_t cursor);

// A run's formula: the most bytes one rank sends and the sequential steps, in numbers and in
// the curriculum's words. `known` is false for a run of unknown kind (no marks).
struct RunFormula {
  bool known = false;
  double bytes_per_rank = 0;
  int steps = 0;
  std::string bytes_text, steps_text;  // "2(P-1)/P·N", "2(P-1)"
};
RunFormula run_formula(const Role& role, int P, double N);

// How far cell (rank, chunk) has come, 0..ranks: its contribution count, or (all-gather,
// broadcast) ranks once it holds its final data and 0 before (nothing it needs yet).
int cell_level(const ChunkState& s, CellMeaning m, int rank, int chunk);

}  // namespace dtl::viz
