#include "core/trace/steps.h"

#include <algorithm>
#include <climits>
#include <iterator>
#include <unordered_map>

namespace dtl {

std::vector<Event> transfers_in_order(const std::vector<Event>& events) {
  std::vector<Event> out;
  for (const Event& e : events)
    if (e.kind == EventKind::recv) out.push_back(e);
  std::stable_sort(out.begin(), out.end(), [](const Event& a, const Event& b) {
    return a.end_ns != b.end_ns ? a.end_ns < b.end_ns : a.rank < b.rank;
  });
  return out;
}

const std::vector<Event>& LandingOrder::update(const std::vector<Event>& events) {
  for (const Event& e : transfers_in_order(events)) {
    // A transfer without a flow id (none in a stepped run) is known by its receiver and start.
    const std::uint64_t key =
        e.flow_id ? e.flow_id : (1ull << 63) ^ (std::uint64_t(e.rank) << 48) ^ std::uint64_t(e.begin_ns);
    if (seen_.insert(key).second) order_.push_back(e);
  }
  return order_;
}

RunMarks run_marks(const std::vector<Event>& events, int ranks, const std::function<bool(const Event&)>& is_run_start) {
  RunMarks m;
  m.by_rank.resize(std::size_t(std::max(0, ranks)));
  for (const Event& e : events)
    if (e.kind == EventKind::mark && e.rank >= 0 && e.rank < ranks && is_run_start(e))
      m.by_rank[std::size_t(e.rank)].push_back(&e);
  for (auto& v : m.by_rank)
    std::stable_sort(v.begin(), v.end(), [](const Event* a, const Event* b) { return a->begin_ns < b->begin_ns; });
  return m;
}

int run_of(const RunMarks& marks, const Event& recv) {
  if (recv.rank < 0 || recv.rank >= int(marks.by_rank.size())) return -1;
  const auto& v = marks.by_rank[std::size_t(recv.rank)];
  return int(std::upper_bound(v.begin(), v.end(), recv.end_ns,
                              [](std::int64_t t, const Event* m) { return t < m->begin_ns; }) -
             v.begin()) -
         1;
}

std::vector<Event> collectives_in_order(const std::vector<Event>& events) {
  std::vector<Event> out;
  std::unordered_map<int, int> last_step;  // per rank: the step of its latest compute span so far
  for (const Event& e : events) {          // sorted by begin
    if (e.kind == EventKind::compute && e.step >= 0) last_step[e.rank] = e.step;
    if (e.kind != EventKind::collective || (e.group_rank >= 0 ? e.group_rank != 0 : e.rank != 0)) continue;
    out.push_back(e);
    if (out.back().step < 0)
      if (auto it = last_step.find(e.rank); it != last_step.end()) out.back().step = it->second;
  }
  std::stable_sort(out.begin(), out.end(), [](const Event& a, const Event& b) {
    return a.end_ns != b.end_ns ? a.end_ns < b.end_ns : a.rank < b.rank;
  });
  return out;
}

namespace {

// Each rank's reference phases as sorted, merged [begin, end) ranges.
std::unordered_map<int, std::vector<std::pair<std::int64_t, std::int64_t>>> reference_ranges(
    const std::vector<Event>& events, const std::function<bool(const Event&)>& is_reference) {
  std::unordered_map<int, std::vector<std::pair<std::int64_t, std::int64_t>>> spans, open;
  for (const Event& e : events) {
    if (e.kind == EventKind::phase && is_reference(e)) spans[e.rank].push_back({e.begin_ns, e.end_ns});
    if (e.kind == EventKind::mark && is_reference(e)) open[e.rank].push_back({e.begin_ns, INT64_MAX});
  }
  for (auto& [rank, marks] : open) {  // a begin mark whose span exists is that span
    auto& done = spans[rank];
    std::vector<std::int64_t> begins;
    for (const auto& s : done) begins.push_back(s.first);
    std::sort(begins.begin(), begins.end());
    for (const auto& m : marks)
      if (!std::binary_search(begins.begin(), begins.end(), m.first)) done.push_back(m);
  }
  for (auto& [rank, v] : spans) {
    std::sort(v.begin(), v.end());
    std::vector<std::pair<std::int64_t, std::int64_t>> merged;
    for (const auto& r : v)
      if (!merged.empty() && r.first <= merged.back().second)
        merged.back().second = std::max(merged.back().second, r.second);
      else
        merged.push_back(r);
    v = std::move(merged);
  }
  return spans;
}

}  // namespace

std::vector<Event> collective_steps(const std::vector<Event>& events,
                                    const std::function<bool(const Event&)>& is_reference) {
  const auto ranges = reference_ranges(events, is_reference);
  std::vector<Event> steps = collectives_in_order(events);
  std::erase_if(steps, [&](const Event& e) {
    const auto it = ranges.find(e.rank);
    if (it == ranges.end()) return false;
    const auto& v = it->second;  // the last range beginning at or before e
    auto r = std::upper_bound(v.begin(), v.end(), std::pair{e.begin_ns, INT64_MAX});
    return r != v.begin() && e.begin_ns < std::prev(r)->second;
  });
  return steps;
}

}  // namespace dtl
