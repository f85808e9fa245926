// TraceIndex: everything the views derive from a TraceData, built once when a trace is
// loaded (and again when a live run has recorded more). Each part is O(events) or
// O(ranks); the chunk picture has its own budget (see ChunkTimeline).
//
// Replay = load_trace(path) + index_trace(data): the app (Session::replay), the fuzz test
// and the 512-rank memory test all go through exactly these two calls.
#pragma once

#include <vector>

#include "viz/model/layout.h"

namespace dtl::viz {

struct TraceIndex {
  std::vector<Event> transfers;  // receives, in landing order
  std::vector<Track> tracks;
  ChunkTimeline chunk_timeline;
  BusyIndex busy;
  std::vector<Edge> edges;  // rank pairs that exchanged data, by first transfer
};

// The lab's chunk grid: the trace's "chunks", or one chunk per rank.
int chunk_grid(const TraceData& d);

TraceIndex index_trace(const TraceData& d);

}  // namespace dtl::viz
