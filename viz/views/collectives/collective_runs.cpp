#include "viz/views/collectives/collective_runs.h"

#include <algorithm>
#include <map>

#include "core/theory/collectives.h"
#include "labs/collectives/collectives_lab.h"

namespace dtl::viz {

namespace {

CellMeaning cells_of(CollectiveKind c) {
  if (c == CollectiveKind::all_gather) return CellMeaning::owner_chunk;
  if (c == CollectiveKind::broadcast) return CellMeaning::root_data;
  return CellMeaning::contributions;
}

// Numbers the runs of each name: "ring all_reduce, run 3 of 7".
void number_repeats(std::vector<CollectiveRun>& runs) {
  std::map<std::string, int> total, seen;
  for (const CollectiveRun& r : runs) ++total[r.name];
  for (CollectiveRun& r : runs) {
    r.repeat = ++seen[r.name];
    r.repeats = total[r.name];
  }
}

}  // namespace

std::vector<CollectiveRun> collective_runs(const TraceData& d, const std::vector<Event>& transfers) {
  const RunMarks marks = run_marks(d.events, d.ranks, [&d](const Event& e) {
    const RunPart p = d.role(e).part;  // (a checkpoint's spans are inside a run)
    return p != RunPart::none && !is_checkpoint_part(p);
  });
  std::vector<CollectiveRun> runs;
  int current = -2;  // the run number of runs.back()
  for (std::size_t i = 0; i < transfers.size(); ++i) {
    const Event& e = transfers[i];
    const int run = run_of(marks, e);
    if (runs.empty() || run != current) {
      CollectiveRun r;
      r.first = i;
      if (run >= 0) {
        const std::uint16_t label = marks.by_rank[std::size_t(e.rank)][std::size_t(run)]->label;
        r.name = d.label(label);
        r.role = d.role(label);
        r.cells = cells_of(r.role.collective);
      } else {
        r.name = "transfers";  // no marks: the whole trace as one run
      }
      runs.push_back(std::move(r));
      current = run;
    }
    runs.back().end = i + 1;
  }
  number_repeats(runs);
  return runs;
}

std::size_t run_at(const std::vector<CollectiveRun>& runs, std::size_t cursor) {
  if (runs.empty()) return 0;
  const std::size_t k = cursor == 0 ? 0 : cursor - 1;
  const auto it =
      std::upper_bound(runs.begin(), runs.end(), k, [](std::size_t v, const CollectiveRun& r) { return v < r.end; });
  return std::min(std::size_t(it - runs.begin()), runs.size() - 1);
}

RunFormula run_formula(const Role& role, int P, double N) {
  RunFormula f;
  const CollectiveKind collective = role.collective;
  const AlgorithmKind algo = role.algorithm;
  // The lab's own algorithms and the collectives it builds only (a library collective's
  // transfers are not the lab's).
  const bool lab_built = collective == CollectiveKind::all_reduce || collective == CollectiveKind::reduce_scatter ||
                         collective == CollectiveKind::all_gather || collective == CollectiveKind::broadcast;
  const bool lab_algorithm = algo == AlgorithmKind::naive || algo == AlgorithmKind::ring ||
                             algo == AlgorithmKind::tree || algo == AlgorithmKind::rhd ||
                             algo == AlgorithmKind::ring_sliced || algo == AlgorithmKind::double_tree;
  if (!lab_built || !lab_algorithm) return f;
  const theory::CommCost cost = collective_cost(collective, algo, P, N);
  const CollectiveFormulas words = collective_formulas(collective, algo, P);
  f.known = true;
  f.bytes_per_rank = cost.bytes_per_rank;
  f.steps = cost.steps;
  f.bytes_text = words.bytes;
  f.steps_text = words.steps;
  return f;
}

int cell_level(const ChunkState& s, CellMeaning m, int rank, int chunk) {
  switch (m) {
    case CellMeaning::owner_chunk: return s.holds(rank, chunk, chunk % s.ranks()) ? s.ranks() : 0;
    case CellMeaning::root_data: return s.holds(rank, chunk, 0) ? s.ranks() : 0;
    case CellMeaning::contributions: break;
  }
  return s.count(rank, chunk);
}

}  // namespace dtl::viz
