// Range selection on the timeline (as Perfetto's area selection): the spans of the selected
// ranks inside a time range, totalled by name and by kind. Plain code so a test checks it
// on crafted spans; viz/app/timeline_select.cpp draws the range and the tables.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "viz/model/layout.h"

namespace dtl::viz {

// One row of totals: the spans of one (kind, name), or of one kind.
struct SelectionRow {
  EventKind kind = EventKind::compute;
  std::string name;       // the span's label ("" in a by-kind row)
  std::size_t count = 0;  // spans that overlap the range
  double total_ns = 0;    // their time inside the range (each clipped to it)
  double mean_ns = 0;     // total_ns / count
  double share = 0;       // total_ns / (the range's length × the ranks selected)
};

struct SelectionTotals {
  TimeRange range;
  int ranks = 0;                      // ranks selected
  std::vector<SelectionRow> by_name;  // by total, largest first (ties: by kind, then name)
  std::vector<SelectionRow> by_kind;  // compute, send, recv, collective: those present
};

// The compute and communication spans (compute, send, recv, collective: phases and marks are
// containers, instants have no length) of the ranks whose `selected` entry is true (empty:
// every rank) that overlap [range.begin, range.end). A span counts once in its own row,
// clipped to the range; a span nested in another counts in its row and the other in its
// own, so a kind's shares may add up past 1 (a layer inside its forward).
SelectionTotals selection_totals(const TraceData& d, TimeRange range, const std::vector<bool>& selected = {});

}  // namespace dtl::viz
