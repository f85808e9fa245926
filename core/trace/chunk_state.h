// ChunkState: which ranks' contributions each chunk of each rank's buffer holds,
// replayed from transfer events in completion order. It is what the step-through prints
// and the ring view colors, derived from events alone (the UI keeps no lab state).
//
// Start: chunk c of rank r holds {r}. A receive of chunks [c, c+n) from rank q sets
// them to q's set (a copy) or unites q's set into them (kFlagReduce). The sender's set
// is read at completion time, which is exactly when the threads backend copies the data.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_set>
#include <vector>

#include "core/trace/event.h"

namespace dtl {

class ChunkState {
 public:
  ChunkState(int ranks, int chunks);
  int ranks() const { return ranks_; }
  int chunks() const { return chunks_; }

  void apply(const Event& recv);  // ignores events that are not receives
  int count(int rank, int chunk) const;  // how many ranks' contributions
  bool holds(int rank, int chunk, int contributor) const;

 private:
  std::size_t index(int rank, int chunk) const { return (std::size_t(rank) * std::size_t(chunks_) + std::size_t(chunk)) * words_; }
  int ranks_, chunks_;
  std::size_t words_;
  std::vector<std::uint64_t> bits_;
};

// Receive events of `events` in the order their data landed (by end time, then rank).
std::vector<Event> transfers_in_order(const std::vector<Event>& events);

// Labs that run one algorithm after another (the collectives lab: naive, ring, tree, rhd,
// its timed repetitions, its checks) mark where each run begins with an instant on every
// rank. A transfer belongs to the run its receiver had begun last: runs_of gives, per
// transfer, that mark's number on its receiver (0, 1, ...; -1 before any mark), with
// `is_run_start` saying which instants are such marks, and `marks` each rank's marks in order.
struct RunMarks {
  std::vector<std::vector<const Event*>> by_rank;  // each rank's run marks, in time order
};
RunMarks run_marks(const std::vector<Event>& events, int ranks, const std::function<bool(const Event&)>& is_run_start);
int run_of(const RunMarks& marks, const Event& recv);

// A live, stepped run's transfers in the order the learner saw them land. Its events carry
// run time (core/trace/run_clock.h), in which two transfers that do not depend on each other
// may have landed in either order, so a transfer released now can sort before one released
// earlier; one that depends on another always sorts after it. A controller that follows the
// run keeps what it has shown in place and adds what is new (by flow id) at the end.
class LandingOrder {
 public:
  // Adds the transfers of `events` not seen before, in landing order; returns all so far.
  const std::vector<Event>& update(const std::vector<Event>& events);
  const std::vector<Event>& transfers() const { return order_; }

 private:
  std::vector<Event> order_;
  std::unordered_set<std::uint64_t> seen_;  // by flow id (a stepped run's transfers all have one)
};

}  // namespace dtl
