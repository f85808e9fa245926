#include "viz/model/trace_index.h"

#include <algorithm>

namespace dtl::viz {

int chunk_grid(const TraceData& d) { return std::max(1, d.meta_int("chunks", d.ranks)); }

TraceIndex index_trace(const TraceData& d) {
  TraceIndex x;
  x.transfers = transfers_in_order(d.events);
  x.tracks = layout_tracks(d);
  x.chunk_timeline = ChunkTimeline(x.transfers, std::max(1, d.ranks), chunk_grid(d));
  x.busy = BusyIndex(d);
  x.edges = edges_in_order(x.transfers);
  return x;
}

}  // namespace dtl::viz
