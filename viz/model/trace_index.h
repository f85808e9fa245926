// TraceIndex: everything the views derive from a TraceData, built once when a trace is
// loaded (and again when a live run has recorded more). Each part is O(events) or
// O(ranks); the chunk picture has its own budget (see ChunkTimeline).
//
// Replay = load_trace(path) + index_trace(data): the app (Session::replay), the fuzz test
// and the 512-rank memory test all go through exactly these two calls.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/trace/vocab.h"
#include "viz/model/checkpoint_marks.h"
#include "viz/model/layout.h"

namespace dtl::viz {

struct TraceIndex {
  std::vector<Event> transfers;    // receives, in landing order
  std::vector<Event> collectives;  // one per collective of a group, in finishing order (StepUnit::collectives only)
  StepUnit unit = StepUnit::transfers;
  std::vector<Track> tracks;
  ChunkTimeline chunk_timeline;
  BusyIndex busy;
  std::vector<Edge> edges;             // rank pairs that exchanged data, by first transfer
  std::optional<TimeRange> reference;  // the single-rank reference phase (role part reference), if any
  std::vector<std::string>
      rank_names;  // per trace rank: "rank 3", or a simulated trace's "rank 1024 (pp 1, dp 0, tp 0)"
  std::optional<TimeRange>
      timed;  // from the first timed phase's begin to the last one's end (a running one: the trace's)
  std::optional<TimeRange> first_step;  // first_timed_step(): where a replay's timeline opens
  std::vector<std::uint32_t>
      rank0_phases;  // rank 0's phase spans (indices into events, by begin): the timeline's strip
  std::vector<CheckpointMark> checkpoints;  // rank 0's saves, writes and resume (checkpoint_marks.h)

  // What the cursor counts: transfers, or collectives.
  const std::vector<Event>& steps() const { return unit == StepUnit::transfers ? transfers : collectives; }
};

// The lab's chunk grid: the trace's "chunks", or one chunk per rank.
int chunk_grid(const TraceData& d);

using dtl::collectives_in_order;  // core/trace/steps.h

// Each trace rank's name: "rank r", or for a simulated trace (meta "simulated_ranks", whose
// entries give each trace rank's global rank and coordinates) "rank 1024 (pp 1, dp 0, tp 0)".
// Malformed entries are left at "rank r".
std::vector<std::string> rank_names(const TraceData& d);

// The span of every phase of role part reference (kReferenceRole), or nothing.
std::optional<TimeRange> reference_phase(const TraceData& d);

// The time the timeline fits: the whole trace, or, with the reference hidden, the timed
// phases (from the first one's begin to the last one's end; one still running: to the
// trace's end), set-up and checks around them out of view; a trace without timed phases:
// the run on the longer side of the reference (most labs run it before the ranks train,
// the grid lab checks afterwards). A reference that fills the trace is not hidden.
TimeRange shown_range(const TraceData& d, const TraceIndex& x, bool show_reference);

// The first timed phase (role part timed), from its begin to the latest end of the phase of
// that name on any rank; none without one.
std::optional<TimeRange> first_timed_phase(const TraceData& d);

// Where a replay's timeline opens: one training step of the run's first timed phase (the
// second step when there is one: the first also warms up), from its first compute span to
// the next step's (its communication tail included) or the phase's end; a run without
// numbered steps (the collectives lab) opens on its first timed phase. Nothing timed: none.
std::optional<TimeRange> first_timed_step(const TraceData& d);

// `landed`: a live, stepped run's transfers in the order they landed (core/trace/steps.h's
// LandingOrder); without it, the trace's receives by end time.
TraceIndex index_trace(const TraceData& d, StepUnit unit = StepUnit::transfers,
                       const std::vector<Event>* landed = nullptr);

}  // namespace dtl::viz
