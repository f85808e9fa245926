#include "viz/model/memory_model.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string_view>
#include <unordered_map>

#include "core/trace/trace_limits.h"

namespace dtl::viz {

double MemoryPicture::largest() const {
  double m = std::isfinite(formula) ? std::max(0.0, formula) : 0.0;
  for (std::uint64_t p : peak) m = std::max(m, double(p));
  return m;
}

MemoryPicture memory_at(const TraceData& d, std::int64_t t) {
  MemoryPicture pic;
  const std::size_t P = std::size_t(std::max(0, d.ranks));
  pic.now.resize(P);
  pic.peak.assign(P, 0);
  for (std::size_t r = 0; r < P; ++r) pic.now[r].rank = int(r);
  for (const MemorySample& m : d.memory) {  // sorted by time
    if (m.rank < 0 || std::size_t(m.rank) >= P) continue;
    std::uint64_t total = 0;
    for (auto b : m.bytes) total += b;
    pic.peak[std::size_t(m.rank)] = std::max(pic.peak[std::size_t(m.rank)], total);
    if (m.t_ns <= t) pic.now[std::size_t(m.rank)] = m;
  }
  if (auto it = d.meta.find("predicted_bytes_per_rank"); it != d.meta.end()) {
    const double v = std::strtod(it->second.c_str(), nullptr);
    if (std::isfinite(v) && v > 0) pic.formula = v;
  }
  if (auto it = d.meta.find("predicted_bytes_formula"); it != d.meta.end() && pic.formula > 0)
    pic.formula_text = printable(it->second, 80);
  return pic;
}

double parse_formula_bytes(const std::string& text) {
  const std::size_t b = text.find_first_not_of(" \t"), e = text.find_last_not_of(" \t");
  if (b == std::string::npos) return 0;
  double v = 0;
  const char* end = text.data() + e + 1;
  const auto [ptr, ec] = std::from_chars(text.data() + b, end, v, std::chars_format::general);
  const double most = double(trace_limits::kMaxEventBytes) * trace_limits::kMaxRanks;
  if (ec != std::errc() || ptr != end || !std::isfinite(v) || v <= 0 || v > most) return 0;
  return v;
}

double PhaseMemories::largest() const {
  double m = 0;
  for (const PhaseMemory& p : phases) {
    m = std::max(m, p.formula);
    for (std::uint64_t b : p.peak) m = std::max(m, double(b));
  }
  return m;
}

namespace {

struct Span {
  std::int64_t begin, end;
};

std::uint64_t total(const MemorySample& m) {
  std::uint64_t t = 0;
  for (auto b : m.bytes) t += b;
  return t;
}

// Sorts and joins overlapping spans, so the samples inside them are visited once.
std::vector<Span> merged(std::vector<Span> s) {
  std::sort(s.begin(), s.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
  std::vector<Span> out;
  for (const Span& x : s) {
    if (!out.empty() && x.begin <= out.back().end) out.back().end = std::max(out.back().end, x.end);
    else out.push_back(x);
  }
  return out;
}

}  // namespace

PhaseMemories memory_by_phase(const TraceData& d) {
  PhaseMemories out;
  const std::size_t P = std::size_t(std::max(0, d.ranks));
  const std::string bytes_key = kPhaseFormulaBytes, text_key = kPhaseFormulaText;
  // The phases the metadata names, with their formulas, and their labels' ids.
  std::unordered_map<std::string_view, std::uint16_t> label_id;
  for (std::size_t id = 1; id < d.labels.size(); ++id) label_id.emplace(d.labels[id], std::uint16_t(id));
  std::vector<PhaseMemory> named;
  std::vector<int> phase_of_label(d.labels.size(), -1);
  for (auto it = d.meta.lower_bound(bytes_key); it != d.meta.end() && it->first.starts_with(bytes_key); ++it) {
    const std::string raw = it->first.substr(bytes_key.size());
    if (auto id = label_id.find(raw); id != label_id.end()) phase_of_label[id->second] = int(named.size());
    PhaseMemory& p = named.emplace_back();
    p.label = printable(raw, 40);
    p.formula = parse_formula_bytes(it->second);
    if (auto t = d.meta.find(text_key + raw); t != d.meta.end() && p.formula > 0) p.formula_text = printable(t->second, 80);
  }
  if (named.empty()) return out;
  auto phase_of = [&](const Event& e) {
    const bool ok = e.kind == EventKind::phase && e.label < phase_of_label.size() && e.rank >= 0 && std::size_t(e.rank) < P;
    return ok ? phase_of_label[e.label] : -1;
  };
  // When each phase ran (over all ranks); then the first kMaxMemoryPhases in time order.
  for (const Event& e : d.events) {
    const int k = phase_of(e);
    if (k < 0) continue;
    PhaseMemory& p = named[std::size_t(k)];
    p.begin_ns = p.in_trace ? std::min(p.begin_ns, e.begin_ns) : e.begin_ns;
    p.end_ns = p.in_trace ? std::max(p.end_ns, e.end_ns) : e.end_ns;
    p.in_trace = true;
  }
  std::vector<std::size_t> order(named.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const PhaseMemory &x = named[a], &y = named[b];
    return x.in_trace != y.in_trace ? x.in_trace : x.in_trace && x.begin_ns < y.begin_ns;
  });
  if (order.size() > kMaxMemoryPhases) out.dropped = order.size() - kMaxMemoryPhases, order.resize(kMaxMemoryPhases);
  std::vector<int> slot(named.size(), -1);  // named index → index in out.phases
  for (std::size_t i = 0; i < order.size(); ++i) {
    slot[order[i]] = int(i);
    out.phases.push_back(std::move(named[order[i]]));
  }
  // The kept phases' spans per rank.
  std::vector<std::vector<std::vector<Span>>> spans(out.phases.size(), std::vector<std::vector<Span>>(P));
  for (const Event& e : d.events)
    if (const int k = phase_of(e); k >= 0 && slot[std::size_t(k)] >= 0)
      spans[std::size_t(slot[std::size_t(k)])][std::size_t(e.rank)].push_back({e.begin_ns, e.end_ns});
  // Each rank's samples in time order (d.memory is sorted by time): a counting sort by rank.
  std::vector<std::size_t> first(P + 1, 0), of_rank;
  for (const MemorySample& m : d.memory)
    if (m.rank >= 0 && std::size_t(m.rank) < P) ++first[std::size_t(m.rank) + 1];
  for (std::size_t r = 0; r < P; ++r) first[r + 1] += first[r];
  of_rank.resize(first[P]);
  {
    std::vector<std::size_t> next(first.begin(), first.end() - 1);
    for (std::size_t i = 0; i < d.memory.size(); ++i)
      if (const int r = d.memory[i].rank; r >= 0 && std::size_t(r) < P) of_rank[next[std::size_t(r)]++] = i;
  }
  for (std::size_t k = 0; k < out.phases.size(); ++k) {
    PhaseMemory& p = out.phases[k];
    p.at_peak.resize(P);
    p.peak.assign(P, 0);
    for (std::size_t r = 0; r < P; ++r) p.at_peak[r].rank = int(r);
    if (!p.in_trace) continue;
    for (std::size_t r = 0; r < P; ++r) {
      MemorySample& best = p.at_peak[r];
      bool found = false;
      auto consider = [&](const MemorySample& m, std::int64_t at) {
        const std::uint64_t t = total(m);
        if (found && t <= p.peak[r]) return;  // the first moment of the largest total wins
        best = m, best.t_ns = at, p.peak[r] = t, found = true;
      };
      const auto b = of_rank.begin() + std::ptrdiff_t(first[r]), e = of_rank.begin() + std::ptrdiff_t(first[r + 1]);
      const std::vector<Span> own = spans[k][r].empty() ? std::vector<Span>{{p.begin_ns, p.end_ns}} : merged(std::move(spans[k][r]));
      for (const Span& s : own) {
        // The bytes held as the span begins (the last sample at or before it), then every
        // change inside it.
        auto it = std::upper_bound(b, e, s.begin, [&](std::int64_t t, std::size_t i) { return t < d.memory[i].t_ns; });
        consider(it != b ? d.memory[*(it - 1)] : MemorySample{int(r), s.begin, {}}, s.begin);
        for (; it != e && d.memory[*it].t_ns <= s.end; ++it) consider(d.memory[*it], d.memory[*it].t_ns);
      }
    }
  }
  return out;
}

}  // namespace dtl::viz
