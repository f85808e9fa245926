// Where a replay opens (issue 47, a useful first picture): the cursor (steps applied) that
// puts the main view on the timed step at a moment it has something to show, instead of
// before the run's first step (empty memory bars, the set-up's first collective):
//   pipeline  the first backward of the first timed step (the fill done, the drain to come)
//   memory    the moment the largest rank's total peaks inside that step
//   timeline  the last step (transfer or collective) that lands inside it: the whole step
//             drawn as happened
//   any other the first step that lands inside it: the ring's first chunk of the algorithm
//             being taught, the split view's first collective
// The step is first_timed_step (trace_index.h); a trace without one, or without steps,
// opens at 0 as before. `--at-step K` still moves the cursor anywhere.
#pragma once

#include <cstddef>

#include "labs/view_kind.h"
#include "viz/model/trace_index.h"

namespace dtl::viz {

// The smallest cursor whose time (the landing of step cursor − 1) is at or after t; the
// number of steps when none lands that late.
std::size_t cursor_at_or_after(const std::vector<Event>& steps, std::int64_t t);

// The opening cursor for a replay whose main view is `main`.
std::size_t opening_cursor(const TraceData& d, const TraceIndex& x, ViewKind main);

}  // namespace dtl::viz
