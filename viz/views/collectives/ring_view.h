// The collectives lab's view (ring_view.cpp): the run at the cursor — one algorithm's
// traced run, one of its timed repetitions, or an identity check — drawn in its own shape
// (ring: a circle; naive: a star on rank 0; binomial tree: levels from rank 0; recursive
// halving-doubling: a circle with the pairs of the current round), each rank's buffer as
// chunk cells, the transfer in flight, and the run's bytes beside its own formula.
// Declared here so tests can read what a frame showed; the panel registers itself.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/trace/chunk_state.h"
#include "viz/app/views.h"
#include "viz/model/layout.h"
#include "viz/views/collectives/collective_runs.h"

namespace dtl::viz {

// How the ranks are placed: the algorithm's own shape.
enum class RunShape { ring, star, tree, pairs };
RunShape shape_of(const Role& run_role);
// Node centres for P ranks in the box (x0, y0, w, h), in `shape`.
std::vector<Vec2> shape_positions(RunShape shape, int P, float x0, float y0, float w, float h);

struct RingView final : Panel {
  // What the last frame showed (tests read it): the run, its formula, its counters.
  struct Shown {
    std::string run;                  // "ring all_reduce · run 1 of 7" (the checked run, then the timed repetitions)
    std::string formula;              // "2(P-1)/P·N = 1.5 KiB" ("" when the run's kind is unknown)
    double most_sent = 0;             // bytes the busiest rank sent in this run so far
    double predicted = 0;             // the formula's bytes per rank
    std::size_t done = 0, total = 0;  // this run's transfers landed so far, and in all (a live run: so far)
    RunShape shape = RunShape::ring;
    bool matrix = false;     // cells in a rank × chunk grid beside the nodes (too many to sit on them)
    int complete_cells = 0;  // cells at their final level (count == P, or final data)
    // Transfers of this run on the wire when the one at the cursor landed (both sides had
    // posted, not landed yet): the sliced ring's slices on every link at once, and the most on
    // one link (C channels: C lanes side by side, the parallel rings).
    int in_flight = 0, most_on_one_link = 0;
  } shown;
  void Draw(const Frame& f) override;
  void Restart() override { runs_key_ = {}, picture_key_ = {}; }

 private:
  void Index(const Frame& f);  // runs_ and the current run's picture, when the trace grew
  void DrawCaption(const Frame& f, const CollectiveRun& run, const Event* moving, bool going_on);
  std::vector<CollectiveRun> runs_;
  std::array<std::size_t, 2> runs_key_{};     // (trace address, transfers)
  std::size_t run_ = 0;                       // the run at the cursor
  std::vector<Event> run_transfers_;          // its transfers, landing order
  std::vector<std::int64_t> run_on_wire_;     // each one's start: the later of its send and its receive
  ChunkTimeline timeline_;                    // its pictures (from every rank holding its own data)
  std::vector<Edge> run_edges_;               // the pairs it used, by first transfer
  std::array<std::size_t, 3> picture_key_{};  // (runs key's transfers, run index, run end)
};

}  // namespace dtl::viz
