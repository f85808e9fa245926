#include "viz/model/trace_index.h"

#include <algorithm>
#include <climits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>
#include <utility>

namespace dtl::viz {

int chunk_grid(const TraceData& d) { return std::max(1, d.meta_int(meta_key_name(MetaKey::chunks), d.ranks)); }

std::optional<TimeRange> reference_phase(const TraceData& d) {
  std::optional<TimeRange> r;
  for (const Event& e : d.events) {
    if (e.kind != EventKind::phase || d.role(e).part != RunPart::reference) continue;
    if (!r) r = TimeRange{e.begin_ns, e.end_ns};
    r->begin = std::min(r->begin, e.begin_ns);
    r->end = std::max(r->end, e.end_ns);
  }
  return r;
}

std::optional<TimeRange> first_timed_phase(const TraceData& d) {
  const Event* phase = nullptr;
  for (const Event& e : d.events)  // sorted by begin: the first timed phase
    if (e.kind == EventKind::phase && d.role(e).part == RunPart::timed) {
      phase = &e;
      break;
    }
  if (!phase) return std::nullopt;
  TimeRange ph{phase->begin_ns, phase->end_ns};
  for (const Event& e : d.events)  // the same phase on every rank
    if (e.kind == EventKind::phase && e.label == phase->label && e.begin_ns < ph.end)
      ph.end = std::max(ph.end, e.end_ns);
  return ph;
}

std::optional<TimeRange> first_timed_step(const TraceData& d) {
  const std::optional<TimeRange> timed = first_timed_phase(d);
  if (!timed) return std::nullopt;
  const TimeRange ph = *timed;
  std::map<int, std::int64_t> first_begin;  // step → its first compute span's begin inside the phase
  for (const Event& e : d.events)
    if (e.kind == EventKind::compute && e.step >= 0 && e.begin_ns >= ph.begin && e.begin_ns < ph.end &&
        !first_begin.count(e.step))
      first_begin[e.step] = e.begin_ns;
  if (first_begin.empty()) return ph;
  auto it = first_begin.begin();
  if (first_begin.size() > 1) ++it;
  const auto next = std::next(it);
  return TimeRange{it->second, next == first_begin.end() ? ph.end : next->second};
}

namespace {

// The timed phases' extent: their spans, and a phase begun after every recorded span ended
// (its begin mark only: a live run inside it) reaching to the trace's end.
std::optional<TimeRange> timed_extent(const TraceData& d) {
  std::optional<TimeRange> r;
  std::int64_t last_span_end = INT64_MIN, last_mark = INT64_MIN;
  for (const Event& e : d.events) {
    if ((e.kind != EventKind::phase && e.kind != EventKind::mark) || d.role(e).part != RunPart::timed) continue;
    const std::int64_t end = e.kind == EventKind::phase ? e.end_ns : e.begin_ns;
    if (!r) r = TimeRange{e.begin_ns, end};
    r->begin = std::min(r->begin, e.begin_ns), r->end = std::max(r->end, end);
    if (e.kind == EventKind::phase)
      last_span_end = std::max(last_span_end, e.end_ns);
    else
      last_mark = std::max(last_mark, e.begin_ns);
  }
  if (r && last_mark > last_span_end) r->end = d.t_end;
  return r;
}

}  // namespace

TimeRange shown_range(const TraceData& d, const TraceIndex& x, bool show_reference) {
  TimeRange all{d.t_begin, d.t_end};
  if (show_reference || !x.reference) return all;
  if (x.timed && x.timed->end > x.timed->begin) {
    // The timed phases, less the reference on rank 0: the other ranks may enter theirs
    // (and wait at its first collective) while rank 0 still runs the reference.
    TimeRange timed{std::max(all.begin, x.timed->begin), std::min(all.end, x.timed->end)};
    if (x.reference->end <= timed.end)
      timed.begin = std::max(timed.begin, x.reference->end);
    else if (x.reference->begin >= timed.begin)
      timed.end = std::min(timed.end, x.reference->begin);
    if (timed.end > timed.begin) return timed;
  }
  const std::int64_t before = x.reference->begin - d.t_begin, after = d.t_end - x.reference->end;
  if (before <= 0 && after <= 0) return all;
  if (after >= before)
    all.begin = std::max(all.begin, x.reference->end);
  else
    all.end = std::min(all.end, x.reference->begin);
  return all;
}

std::vector<std::string> rank_names(const TraceData& d) {
  std::vector<std::string> names;
  for (int r = 0; r < d.ranks; ++r) names.push_back("rank " + std::to_string(r));
  const std::string* who = d.meta_of(MetaKey::simulated_ranks);
  if (!who) return names;
  const nlohmann::json j = nlohmann::json::parse(*who, nullptr, false);
  if (!j.is_array()) return names;
  auto whole = [](const nlohmann::json& o, const char* k, long most) -> long {
    const auto it = o.find(k);
    return it != o.end() && it->is_number_integer() && it->get<long>() >= 0 && it->get<long>() <= most ? it->get<long>()
                                                                                                       : -1;
  };
  for (const nlohmann::json& e : j) {
    if (!e.is_object()) continue;
    const long i = whole(e, "trace_rank", long(d.ranks) - 1), g = whole(e, "rank", 1L << 30);
    const long pp = whole(e, "pp", 1L << 30), dp = whole(e, "dp", 1L << 30), tp = whole(e, "tp", 1L << 30);
    if (i < 0 || g < 0 || pp < 0 || dp < 0 || tp < 0) continue;
    names[std::size_t(i)] = "rank " + std::to_string(g) + " (pp " + std::to_string(pp) + ", dp " + std::to_string(dp) +
                            ", tp " + std::to_string(tp) + ")";
  }
  return names;
}

TraceIndex index_trace(const TraceData& d, StepUnit unit, const std::vector<Event>* landed) {
  TraceIndex x;
  x.unit = unit;
  x.transfers = landed ? *landed : transfers_in_order(d.events);
  if (unit == StepUnit::collectives)
    x.collectives = collective_steps(d.events, [&d](const Event& e) { return d.role(e).part == RunPart::reference; });
  x.tracks = layout_tracks(d);
  x.chunk_timeline = ChunkTimeline(x.transfers, std::max(1, d.ranks), chunk_grid(d));
  x.busy = BusyIndex(d);
  x.edges = edges_in_order(x.transfers);
  x.reference = reference_phase(d);
  x.rank_names = rank_names(d);
  x.timed = timed_extent(d);
  x.first_step = first_timed_step(d);
  for (std::uint32_t i = 0; i < d.events.size(); ++i)
    if (d.events[i].kind == EventKind::phase && d.events[i].rank == 0 && !is_checkpoint_part(d.role(d.events[i]).part))
      x.rank0_phases.push_back(i);  // (a checkpoint's spans have their own marks: x.checkpoints)
  x.checkpoints = checkpoint_marks(d);
  return x;
}

}  // namespace dtl::viz
