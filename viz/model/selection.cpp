#include "viz/model/selection.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace dtl::viz {

namespace {

bool totalled(EventKind k) {
  return k == EventKind::compute || k == EventKind::send || k == EventKind::recv || k == EventKind::collective;
}

// Count, total and the derived mean and share of rows accumulated by key.
template <class Key>
std::vector<SelectionRow> finish(const std::map<Key, SelectionRow>& rows, double rank_time) {
  std::vector<SelectionRow> out;
  for (const auto& [key, row] : rows) {
    SelectionRow r = row;
    r.mean_ns = r.count ? r.total_ns / double(r.count) : 0;
    r.share = rank_time > 0 ? r.total_ns / rank_time : 0;
    out.push_back(r);
  }
  return out;
}

}  // namespace

SelectionTotals selection_totals(const TraceData& d, TimeRange range, const std::vector<bool>& selected) {
  SelectionTotals out;
  out.range = range;
  for (int r = 0; r < d.ranks; ++r)
    out.ranks += selected.empty() || (std::size_t(r) < selected.size() && selected[std::size_t(r)]);
  if (range.end <= range.begin) return out;
  std::map<std::pair<int, std::string>, SelectionRow> by_name;  // (kind, name)
  std::map<int, SelectionRow> by_kind;
  for (const Event& e : d.events) {
    if (!totalled(e.kind) || e.end_ns <= range.begin || e.begin_ns >= range.end) continue;
    if (!selected.empty() && (e.rank < 0 || std::size_t(e.rank) >= selected.size() || !selected[std::size_t(e.rank)]))
      continue;
    const double inside = double(std::min(e.end_ns, range.end) - std::max(e.begin_ns, range.begin));
    SelectionRow& n = by_name[{int(e.kind), d.label(e.label)}];
    n.kind = e.kind, n.name = d.label(e.label), n.count += 1, n.total_ns += inside;
    SelectionRow& k = by_kind[int(e.kind)];
    k.kind = e.kind, k.count += 1, k.total_ns += inside;
  }
  const double rank_time = double(range.end - range.begin) * double(out.ranks);
  out.by_name = finish(by_name, rank_time);
  std::sort(out.by_name.begin(), out.by_name.end(), [](const SelectionRow& a, const SelectionRow& b) {
    return std::make_tuple(-a.total_ns, int(a.kind), a.name) < std::make_tuple(-b.total_ns, int(b.kind), b.name);
  });
  out.by_kind = finish(by_kind, rank_time);
  return out;
}

}  // namespace dtl::viz
