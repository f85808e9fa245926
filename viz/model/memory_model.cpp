#include "viz/model/memory_model.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "core/trace/trace_limits.h"

namespace dtl::viz {

double MemoryPicture::largest() const {
  double m = std::isfinite(formula) ? std::max(0.0, formula) : 0.0;
  for (std::uint64_t p : peak) m = std::max(m, double(p));
  return m;
}

namespace {

// Per rank: the role key of the phase it last began at or before t ("" for none), where the
// trace has per-phase formulas (meta predicted_bytes_of_rank.<role key>.R) at all.
std::vector<std::string> phase_keys_at(const TraceData& d, std::int64_t t) {
  const std::size_t P = std::size_t(std::max(0, d.ranks));
  std::vector<std::string> keys(P);
  const std::string prefix = meta_key_name(MetaKey::predicted_bytes_of_rank, "");
  bool per_phase = false;
  for (auto it = d.meta.lower_bound(prefix); it != d.meta.end() && it->first.starts_with(prefix); ++it)
    per_phase = per_phase || it->first.find('=') != std::string::npos;  // role keys read "schedule=1f1b"
  if (!per_phase) return keys;
  for (const Event& e : d.events) {  // sorted by begin
    if (e.begin_ns > t) break;
    if (e.kind == EventKind::mark && e.rank >= 0 && std::size_t(e.rank) < P && !d.role(e).empty())
      keys[std::size_t(e.rank)] = role_key(d.role(e));
  }
  return keys;
}

}  // namespace

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
  if (const std::string* v_text = d.meta_of(MetaKey::predicted_bytes_per_rank)) {
    const double v = std::strtod(v_text->c_str(), nullptr);
    if (std::isfinite(v) && v > 0) pic.formula = v;
  }
  // Per-rank formulas (a pipeline's stages keep different activations): each rank's own
  // tick, the one of the phase the rank is in at t where the lab gave one per phase.
  pic.formula_of_rank.assign(P, 0.0);
  const std::vector<std::string> phase_key = phase_keys_at(d, t);
  bool per_rank = false;
  for (std::size_t r = 0; r < P; ++r) {
    auto it = d.meta.end();
    if (!phase_key[r].empty())
      it = d.meta.find(meta_key_name(MetaKey::predicted_bytes_of_rank, phase_key[r] + "." + std::to_string(r)));
    if (it == d.meta.end()) it = d.meta.find(meta_key_name(MetaKey::predicted_bytes_of_rank, std::to_string(r)));
    if (it == d.meta.end()) continue;
    pic.formula_of_rank[r] = parse_formula_bytes(it->second);
    per_rank = per_rank || pic.formula_of_rank[r] > 0;
  }
  if (per_rank && pic.formula == 0)
    pic.formula = *std::max_element(pic.formula_of_rank.begin(), pic.formula_of_rank.end());
  if (!per_rank) pic.formula_of_rank.clear();
  if (const std::string* text = d.meta_of(MetaKey::predicted_bytes_formula); text && pic.formula > 0)
    pic.formula_text = printable(*text, 80);
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
    if (!out.empty() && x.begin <= out.back().end)
      out.back().end = std::max(out.back().end, x.end);
    else
      out.push_back(x);
  }
  return out;
}

}  // namespace

namespace {

// The phases the metadata names ("phase_formula_bytes.<role key>"), with their formulas; and
// for every label whose role has that key, the phase's index (-1: none).
std::vector<PhaseMemory> named_phases(const TraceData& d, std::vector<int>& phase_of_label) {
  const std::string bytes_key = meta_key_name(MetaKey::phase_formula_bytes, ""),
                    text_key = meta_key_name(MetaKey::phase_formula_text, "");
  std::unordered_map<std::string, int> phase_of_key;
  std::vector<PhaseMemory> named;
  for (auto it = d.meta.lower_bound(bytes_key); it != d.meta.end() && it->first.starts_with(bytes_key); ++it) {
    const std::string key = it->first.substr(bytes_key.size());
    phase_of_key.emplace(key, int(named.size()));
    PhaseMemory& p = named.emplace_back();
    p.label = printable(key, 40);  // until a span of the phase gives its words
    p.formula = parse_formula_bytes(it->second);
    if (auto t = d.meta.find(text_key + key); t != d.meta.end() && p.formula > 0)
      p.formula_text = printable(t->second, 80);
  }
  phase_of_label.assign(d.labels.size(), -1);
  for (std::size_t id = 1; id < d.labels.size(); ++id) {
    const Role& role = d.role(std::uint16_t(id));
    if (role.empty()) continue;
    if (auto k = phase_of_key.find(role_key(role)); k != phase_of_key.end()) {
      phase_of_label[id] = k->second;
      named[std::size_t(k->second)].label = printable(d.labels[id], 40);
      named[std::size_t(k->second)].role = role;
    }
  }
  return named;
}

// Each phase's spans, and for a phase still running (its begin mark has no span yet, a live
// run) a span from its mark to the trace's end, kept as kind mark.
std::vector<Event> phase_spans_so_far(const TraceData& d, const std::function<int(const Event&)>& phase_of) {
  std::vector<Event> out;
  std::set<std::tuple<int, int, std::int64_t>> finished;  // (phase, rank, begin) of each span
  for (const Event& e : d.events)
    if (e.kind == EventKind::phase && phase_of(e) >= 0) {
      out.push_back(e);
      finished.insert({phase_of(e), e.rank, e.begin_ns});
    }
  for (const Event& e : d.events)
    if (e.kind == EventKind::mark && phase_of(e) >= 0 && !finished.count({phase_of(e), e.rank, e.begin_ns})) {
      out.push_back(e);
      out.back().end_ns = std::max(e.begin_ns, d.t_end);
    }
  return out;
}

// The first kMaxMemoryPhases phases in time order (those not in the trace last).
void keep_in_time_order(std::vector<PhaseMemory> named, PhaseMemories& out, std::vector<int>& slot) {
  std::vector<std::size_t> order(named.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const PhaseMemory &x = named[a], &y = named[b];
    return x.in_trace != y.in_trace ? x.in_trace : x.in_trace && x.begin_ns < y.begin_ns;
  });
  if (order.size() > kMaxMemoryPhases) out.dropped = order.size() - kMaxMemoryPhases, order.resize(kMaxMemoryPhases);
  slot.assign(named.size(), -1);  // named index → index in out.phases
  for (std::size_t i = 0; i < order.size(); ++i) {
    slot[order[i]] = int(i);
    out.phases.push_back(std::move(named[order[i]]));
  }
}

// Each rank's samples in time order (d.memory is sorted by time): a counting sort by rank.
// Rank r's are of_rank[first[r] .. first[r+1]).
struct SamplesByRank {
  std::vector<std::size_t> first, of_rank;
};
SamplesByRank samples_by_rank(const TraceData& d, std::size_t P) {
  SamplesByRank s;
  s.first.assign(P + 1, 0);
  for (const MemorySample& m : d.memory)
    if (m.rank >= 0 && std::size_t(m.rank) < P) ++s.first[std::size_t(m.rank) + 1];
  for (std::size_t r = 0; r < P; ++r) s.first[r + 1] += s.first[r];
  s.of_rank.resize(s.first[P]);
  std::vector<std::size_t> next(s.first.begin(), s.first.end() - 1);
  for (std::size_t i = 0; i < d.memory.size(); ++i)
    if (const int r = d.memory[i].rank; r >= 0 && std::size_t(r) < P) s.of_rank[next[std::size_t(r)]++] = i;
  return s;
}

// Rank r's peak inside `own` spans of phase p: the bytes held as each span begins (the
// last sample at or before it), then every change inside it; the first moment of the
// largest total wins.
void peak_in_spans(const TraceData& d, const SamplesByRank& s, std::size_t r, const std::vector<Span>& own,
                   PhaseMemory& p) {
  MemorySample& best = p.at_peak[r];
  bool found = false;
  auto consider = [&](const MemorySample& m, std::int64_t at) {
    const std::uint64_t t = total(m);
    if (found && t <= p.peak[r]) return;
    best = m, best.t_ns = at, p.peak[r] = t, found = true;
  };
  const auto b = s.of_rank.begin() + std::ptrdiff_t(s.first[r]), e = s.of_rank.begin() + std::ptrdiff_t(s.first[r + 1]);
  for (const Span& span : own) {
    auto it = std::upper_bound(b, e, span.begin, [&](std::int64_t t, std::size_t i) { return t < d.memory[i].t_ns; });
    consider(it != b ? d.memory[*(it - 1)] : MemorySample{int(r), span.begin, {}}, span.begin);
    for (; it != e && d.memory[*it].t_ns <= span.end; ++it) consider(d.memory[*it], d.memory[*it].t_ns);
  }
}

}  // namespace

PhaseMemories memory_by_phase(const TraceData& d) {
  PhaseMemories out;
  const std::size_t P = std::size_t(std::max(0, d.ranks));
  std::vector<int> phase_of_label;
  std::vector<PhaseMemory> named = named_phases(d, phase_of_label);
  if (named.empty()) return out;
  auto phase_of = [&](const Event& e) {
    const bool ok = (e.kind == EventKind::phase || e.kind == EventKind::mark) && e.label < phase_of_label.size() &&
                    e.rank >= 0 && std::size_t(e.rank) < P;
    return ok ? phase_of_label[e.label] : -1;
  };
  const std::vector<Event> ran = phase_spans_so_far(d, phase_of);
  for (const Event& e : ran) {  // when each phase ran, over all ranks
    PhaseMemory& p = named[std::size_t(phase_of(e))];
    p.begin_ns = p.in_trace ? std::min(p.begin_ns, e.begin_ns) : e.begin_ns;
    p.end_ns = p.in_trace ? std::max(p.end_ns, e.end_ns) : e.end_ns;
    p.in_trace = true;
    p.in_progress = p.in_progress || e.kind == EventKind::mark;
  }
  std::vector<int> slot;
  keep_in_time_order(std::move(named), out, slot);
  std::vector<std::vector<std::vector<Span>>> spans(out.phases.size(), std::vector<std::vector<Span>>(P));
  for (const Event& e : ran)  // the kept phases' spans per rank
    if (const int k = phase_of(e); slot[std::size_t(k)] >= 0)
      spans[std::size_t(slot[std::size_t(k)])][std::size_t(e.rank)].push_back({e.begin_ns, e.end_ns});
  const SamplesByRank samples = samples_by_rank(d, P);
  for (std::size_t k = 0; k < out.phases.size(); ++k) {
    PhaseMemory& p = out.phases[k];
    p.at_peak.resize(P);
    p.peak.assign(P, 0);
    for (std::size_t r = 0; r < P; ++r) p.at_peak[r].rank = int(r);
    if (!p.in_trace) continue;
    for (std::size_t r = 0; r < P; ++r)
      peak_in_spans(d, samples, r,
                    spans[k][r].empty() ? std::vector<Span>{{p.begin_ns, p.end_ns}} : merged(std::move(spans[k][r])),
                    p);
  }
  return out;
}

}  // namespace dtl::viz
