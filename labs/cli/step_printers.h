// What `dtlab run LAB --step` prints for each step (step_through.cpp drives them): plain
// text a terminal shows as it comes, all derived from the run's events (the viewer draws
// the same events).
#pragma once

#include <ostream>
#include <vector>

#include "core/trace/chunk_state.h"
#include "core/trace/trace.h"

namespace dtl::cli {

// The chunk picture: a row per rank, a cell per chunk holding how many ranks'
// contributions it has ("4*" = all of them); in bands of chunks when wider than `width`.
void print_chunks(std::ostream& os, const ChunkState& s, std::size_t width);
// One transfer: who sent what to whom ("transfer 5: rank 0 -> rank 1  chunk 2 ...").
void print_transfer(std::ostream& os, std::size_t index, const Event& recv);
// One library collective with what it is for: "collective 3: all_reduce of 256 KiB on the
// dp group · gradient bucket 2".
void print_collective(std::ostream& os, std::size_t index, const Event& e, const Trace& trace);

// Each rank's memory by tag now (replayed from its alloc/free events), printed when it
// changed since the last call: "memory  rank 0: param 1.1 MiB  grad 1.1 MiB ... = 5.0 MiB".
class MemoryLines {
 public:
  void print_if_changed(std::ostream& os, const std::vector<Event>& events, int ranks);

 private:
  std::vector<std::vector<std::uint64_t>> last_tags_;
};

// A pipeline's current training step as a text Gantt growing action by action: a row per
// stage, time across, each action its pass and micro-batch (F2, B0, W1) as wide as it took,
// the bubble as dots, and the bubble so far. Printed when an action was added; `width`
// columns wide at most (time across in 72 columns, fewer on a narrower terminal).
class TextGantt {
 public:
  void print_if_grown(std::ostream& os, const std::vector<Event>& events, int ranks, const Trace& trace,
                      std::size_t width);

 private:
  std::size_t last_actions_ = 0;
  int last_step_ = -1;
};

}  // namespace dtl::cli
