// Writes a Trace as Chrome Trace Event JSON, which Perfetto and chrome://tracing open.
//
//   pid = rank, tid = stream (and lane, see below), "X" spans, "s"/"f" flow events that
//   join each send to its receive, "C" counters for memory by tag, "M" names.
//
// Perfetto requires the spans of one track to nest. A rank's async sends and receives
// may overlap without nesting, so each (rank, stream) is split into lanes: a span goes
// to the first lane where it nests; the lane becomes its own track ("main", "main #2").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/trace/trace.h"

namespace dtl {

// Lane for each span of one track (spans sorted by begin, ties longer first): lane 0
// unless it would partially overlap an open span there. A span that fits no lane below
// max_lanes goes to the last one, so the cost is at most spans x max_lanes (a hostile
// trace of n staggered spans would otherwise take n lanes and n^2 time).
std::vector<int> assign_lanes(const std::vector<Event>& spans, int max_lanes = 1 << 20);

// Returns the JSON text. `error` (if not empty) is recorded in otherData, so a trace
// written after a failure says why it ends early.
std::string chrome_trace_json(const Trace& trace, const std::string& error = "");
// Writes `path` (JSON) and its compact companion `path`.dtlt (core/trace/binary_trace.h).
void write_chrome_trace(const Trace& trace, const std::string& path, const std::string& error = "");

bool is_span(EventKind k);

}  // namespace dtl
