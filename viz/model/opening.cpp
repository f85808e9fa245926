// Where a replay opens (opening.h).
#include "viz/model/opening.h"

#include <numeric>

#include "labs/pipeline/pipeline_lab.h"

namespace dtl::viz {

namespace {

// The first backward span's begin inside w, or w.begin when there is none.
std::int64_t first_backward(const TraceData& d, TimeRange w) {
  for (const Event& e : d.events)  // sorted by begin
    if (e.begin_ns >= w.begin && e.begin_ns < w.end && e.kind == EventKind::compute && d.role(e).pass == Pass::backward)
      return e.begin_ns;
  return w.begin;
}

// When the largest rank's total memory is highest inside w (its first such moment), or w.begin.
std::int64_t memory_peak(const TraceData& d, TimeRange w) {
  std::int64_t at = w.begin;
  std::uint64_t most = 0;
  for (const MemorySample& m : d.memory) {  // sorted by time
    if (m.t_ns < w.begin || m.t_ns >= w.end) continue;
    const std::uint64_t total = std::accumulate(m.bytes.begin(), m.bytes.end(), std::uint64_t(0));
    if (total > most) most = total, at = m.t_ns;
  }
  return at;
}

}  // namespace

std::size_t cursor_at_or_after(const std::vector<Event>& steps, std::int64_t t) {
  for (std::size_t i = 0; i < steps.size(); ++i)  // in landing order
    if (steps[i].end_ns >= t) return i + 1;
  return steps.size();
}

std::size_t opening_cursor(const TraceData& d, const TraceIndex& x, ViewKind main) {
  if (!x.first_step || x.steps().empty()) return 0;
  const TimeRange w = *x.first_step;
  // The timeline draws what has happened by the cursor brighter: at the step's end, all of it.
  const std::int64_t t = main == kPipelineView        ? first_backward(d, w)
                         : main == ViewKind::memory   ? memory_peak(d, w)
                         : main == ViewKind::timeline ? w.end
                                                      : w.begin;
  std::size_t c = cursor_at_or_after(x.steps(), t);
  // No step lands between t and the step's end (the GPT's few all-reduces): the last one
  // before, the state the step starts from, rather than a picture of a later phase.
  while (c > 1 && x.steps()[c - 1].end_ns > w.end) --c;
  return c;
}

}  // namespace dtl::viz
