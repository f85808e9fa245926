#include "core/trace/steps.h"

#include <algorithm>
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
    const std::uint64_t key = e.flow_id ? e.flow_id : (1ull << 63) ^ (std::uint64_t(e.rank) << 48) ^ std::uint64_t(e.begin_ns);
    if (seen_.insert(key).second) order_.push_back(e);
  }
  return order_;
}

RunMarks run_marks(const std::vector<Event>& events, int ranks, const std::function<bool(const Event&)>& is_run_start) {
  RunMarks m;
  m.by_rank.resize(std::size_t(std::max(0, ranks)));
  for (const Event& e : events)
    if (e.kind == EventKind::mark && e.rank >= 0 && e.rank < ranks && is_run_start(e)) m.by_rank[std::size_t(e.rank)].push_back(&e);
  for (auto& v : m.by_rank)
    std::stable_sort(v.begin(), v.end(), [](const Event* a, const Event* b) { return a->begin_ns < b->begin_ns; });
  return m;
}

int run_of(const RunMarks& marks, const Event& recv) {
  if (recv.rank < 0 || recv.rank >= int(marks.by_rank.size())) return -1;
  const auto& v = marks.by_rank[std::size_t(recv.rank)];
  return int(std::upper_bound(v.begin(), v.end(), recv.end_ns, [](std::int64_t t, const Event* m) { return t < m->begin_ns; }) -
             v.begin()) - 1;
}

std::vector<Event> collectives_in_order(const std::vector<Event>& events) {
  std::vector<Event> out;
  std::unordered_map<int, int> last_step;  // per rank: the step of its latest compute span so far
  for (const Event& e : events) {  // sorted by begin
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

}  // namespace dtl
