#include "labs/collectives/views/collective_runs.h"

#include <algorithm>
#include <map>

#include "core/theory/collectives.h"
#include "labs/collectives/collectives_lab.h"

namespace dtl::viz {

namespace {

// Each rank's run marks (their times and labels), in the order the rank recorded them.
struct RankMarks {
  std::vector<std::int64_t> at;
  std::vector<std::uint16_t> label;
};

std::vector<RankMarks> marks_by_rank(const TraceData& d) {
  std::vector<RankMarks> out(std::size_t(std::max(0, d.ranks)));
  for (const Event& e : d.events)  // sorted by begin
    if (e.kind == EventKind::mark && e.rank >= 0 && e.rank < d.ranks && d.role(e).part != RunPart::none) {
      out[std::size_t(e.rank)].at.push_back(e.begin_ns);
      out[std::size_t(e.rank)].label.push_back(e.label);
    }
  return out;
}

// The ordinal of the run a transfer landed in: its receiver's latest mark at or before it
// (-1: before any).
int run_ordinal(const RankMarks& m, const Event& recv) {
  return int(std::upper_bound(m.at.begin(), m.at.end(), recv.end_ns) - m.at.begin()) - 1;
}

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
  const std::vector<RankMarks> marks = marks_by_rank(d);
  std::vector<CollectiveRun> runs;
  int current = -2;  // the ordinal of runs.back()
  for (std::size_t i = 0; i < transfers.size(); ++i) {
    const Event& e = transfers[i];
    const RankMarks* m = e.rank >= 0 && e.rank < int(marks.size()) ? &marks[std::size_t(e.rank)] : nullptr;
    const int ordinal = m ? run_ordinal(*m, e) : -1;
    if (runs.empty() || ordinal != current) {
      CollectiveRun run;
      run.first = i;
      if (ordinal >= 0) {
        const std::uint16_t label = m->label[std::size_t(ordinal)];
        run.name = d.label(label);
        run.role = d.role(label);
        run.cells = cells_of(run.role.collective);
      } else {
        run.name = "transfers";  // no marks: the whole trace as one run
      }
      runs.push_back(std::move(run));
      current = ordinal;
    }
    runs.back().end = i + 1;
  }
  number_repeats(runs);
  return runs;
}

std::size_t run_at(const std::vector<CollectiveRun>& runs, std::size_t cursor) {
  if (runs.empty()) return 0;
  const std::size_t k = cursor == 0 ? 0 : cursor - 1;
  const auto it = std::upper_bound(runs.begin(), runs.end(), k, [](std::size_t v, const CollectiveRun& r) { return v < r.end; });
  return std::min(std::size_t(it - runs.begin()), runs.size() - 1);
}

RunFormula run_formula(const Role& role, int P, double N) {
  RunFormula f;
  const int c = int(role.collective), a = int(role.algorithm);
  // The lab's own algorithms only (a library collective's transfers are not the lab's).
  if (role.collective == CollectiveKind::none || c - 1 > int(theory::Collective::broadcast) ||
      a < int(AlgorithmKind::naive) || a > int(AlgorithmKind::rhd))
    return f;
  const auto collective = theory::Collective(c - 1);
  const auto algo = theory::Algo(a - int(AlgorithmKind::naive));
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
