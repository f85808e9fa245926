// ChunkState: which ranks' contributions each chunk of each rank's buffer holds,
// replayed from transfer events in completion order. It is what the step-through prints
// and the ring view colors, derived from events alone (the UI keeps no lab state).
//
// Start: chunk c of rank r holds {r}. A receive of chunks [c, c+n) from rank q sets
// them to q's set (a copy) or unites q's set into them (kFlagReduce). The sender's set
// is read at completion time, which is exactly when the threads backend copies the data.
#pragma once

#include <cstdint>
#include <vector>

#include "core/trace/event.h"
#include "core/trace/steps.h"  // transfers_in_order, LandingOrder: what the picture is replayed from

namespace dtl {

class ChunkState {
 public:
  ChunkState(int ranks, int chunks);
  int ranks() const { return ranks_; }
  int chunks() const { return chunks_; }

  void apply(const Event& recv);         // ignores events that are not receives
  int count(int rank, int chunk) const;  // how many ranks' contributions
  bool holds(int rank, int chunk, int contributor) const;

 private:
  std::size_t index(int rank, int chunk) const {
    return (std::size_t(rank) * std::size_t(chunks_) + std::size_t(chunk)) * words_;
  }
  int ranks_, chunks_;
  std::size_t words_;
  std::vector<std::uint64_t> bits_;
};

}  // namespace dtl
