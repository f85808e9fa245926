// What one step of a stepped run is, derived from events alone (the viewer and the terminal
// step-through read the same): a transfer (labs built from point-to-point messages), or a
// library collective of a whole group (labs built on collectives: DDP, ZeRO, tensor parallel,
// the grid, the GPT). See core/trace/step_gate.h for how a run is stepped.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_set>
#include <vector>

#include "core/trace/event.h"

namespace dtl {

// Receive events of `events` in the order their data landed (by end time, then rank).
std::vector<Event> transfers_in_order(const std::vector<Event>& events);

// Labs that run one algorithm after another (the collectives lab: naive, ring, tree, rhd,
// its timed repetitions, its checks) run each as a phase, whose begin mark (an instant, see
// ScopedSpan) every rank records. A transfer belongs to the run its receiver had begun last:
// run_of gives that mark's number on the receiver (0, 1, ...; -1 before any mark);
// `is_run_start` says which instants count.
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

// One event per collective of a group: the one its first member recorded (group rank 0,
// or world rank 0 for the world's), ordered by when it finished (then by rank). A
// collective carries no step of its own: it gets the step of its rank's latest compute
// span before it (the training step it belongs to). `events` sorted by begin.
std::vector<Event> collectives_in_order(const std::vector<Event>& events);

// What a run stepped by collective steps through: collectives_in_order without those inside
// a 1-rank reference phase (its groups of one move nothing; the reference trains rank 0
// alone before the ranks start). `is_reference` says which phase spans and begin marks are
// one; a reference still running (a begin mark without its span) lasts to the end. The
// viewer and the terminal number their steps the same. O(events log events).
std::vector<Event> collective_steps(const std::vector<Event>& events,
                                    const std::function<bool(const Event&)>& is_reference);

}  // namespace dtl
