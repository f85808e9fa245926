#include "viz/model/checkpoint_marks.h"

#include <algorithm>

namespace dtl::viz {

namespace {

// The time of [begin, end) that no span of `saves` covers (the saves are by begin, disjoint).
std::int64_t uncovered(std::int64_t begin, std::int64_t end, const std::vector<CheckpointMark>& saves) {
  std::int64_t covered = 0;
  for (const CheckpointMark& s : saves)
    covered += std::max<std::int64_t>(0, std::min(end, s.end_ns) - std::max(begin, s.begin_ns));
  return std::max<std::int64_t>(0, end - begin - covered);
}

}  // namespace

std::vector<CheckpointMark> checkpoint_marks(const TraceData& d) {
  std::vector<CheckpointMark> marks, saves;
  for (std::uint32_t i = 0; i < d.events.size(); ++i) {
    const Event& e = d.events[i];
    if (e.kind != EventKind::phase || e.rank != 0) continue;
    const RunPart part = d.role(e).part;
    if (!is_checkpoint_part(part)) continue;
    const CheckpointMarkKind kind = part == RunPart::checkpoint         ? CheckpointMarkKind::save
                                    : part == RunPart::checkpoint_write ? CheckpointMarkKind::write
                                                                        : CheckpointMarkKind::resume;
    marks.push_back({kind, e.begin_ns, e.end_ns, e.step, i, 0});
    if (kind == CheckpointMarkKind::save) saves.push_back(marks.back());
  }
  std::stable_sort(marks.begin(), marks.end(),
                   [](const CheckpointMark& a, const CheckpointMark& b) { return a.begin_ns < b.begin_ns; });
  std::stable_sort(saves.begin(), saves.end(),
                   [](const CheckpointMark& a, const CheckpointMark& b) { return a.begin_ns < b.begin_ns; });
  for (CheckpointMark& m : marks)
    if (m.kind == CheckpointMarkKind::write) m.beside_training_ns = uncovered(m.begin_ns, m.end_ns, saves);
  return marks;
}

}  // namespace dtl::viz
