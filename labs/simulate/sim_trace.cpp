// Writing a simulated step as a trace (sim_trace.h).
#include "labs/simulate/sim_trace.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/trace/chrome_writer.h"
#include "core/trace/trace.h"
#include "labs/grid/grid_lab.h"
#include "labs/pipeline/pipeline_lab.h"

namespace dtl::sim {

namespace {

struct Coord {
  int pp, dp, tp, cp;
};
Coord coord_of(const Workload& w, int rank) {  // tp fastest, then cp, then dp, then pp (core/theory/plan.h)
  return {rank / (w.dp * w.cp * w.tp), (rank / (w.cp * w.tp)) % w.dp, rank % w.tp, (rank / w.tp) % w.cp};
}

std::vector<int> sorted_unique(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

int parse_rank(std::string_view text, const Workload& w) {
  int v = 0;
  bool ok = !text.empty() && text.size() < 10;
  for (char ch : text) ok = ok && ch >= '0' && ch <= '9', v = ok ? v * 10 + (ch - '0') : v;
  if (!ok)
    throw UsageError("--ranks-in-trace: '" + std::string(text) + "' is not a rank (use default, all, or 0,8,16-23)");
  if (v >= w.gpus())
    throw UsageError("--ranks-in-trace: rank " + std::to_string(v) + " does not exist; the cluster has ranks 0-" +
                     std::to_string(w.gpus() - 1));
  return v;
}

std::uint16_t axis_group_rank(const Coord& c, char axis) {
  return std::uint16_t(axis == 't'                  ? c.tp
                       : axis == 'd' || axis == 'e' ? c.dp
                       : axis == 'c'                ? c.cp
                                                    : c.pp);  // (ep: within dp)
}

GroupAxis group_axis(char axis) {
  return axis == 't' ? GroupAxis::tp : axis == 'd' ? GroupAxis::dp : axis == 'p' ? GroupAxis::pp : GroupAxis::none;
}

}  // namespace

std::vector<ViewKind> simulated_trace_views(bool whole_grid) {
  std::vector<ViewKind> v = {kPipelineView, ViewKind::timeline};
  if (whole_grid) v.push_back(kTopologyView);
  v.push_back(ViewKind::memory);
  v.push_back(ViewKind::report);
  return v;
}

std::vector<int> default_trace_ranks(const Workload& w) {
  if (w.gpus() <= 64) return parse_trace_ranks("all", w);
  std::vector<int> v;
  const int stage_stride = w.dp * w.cp * w.tp;
  for (int s = 0; s < w.pp; ++s) v.push_back(s * stage_stride);  // one pipeline: dp 0, cp 0, tp 0
  for (int d = 1; d < w.replicas() && int(v.size()) < kMaxTraceRanks; ++d)
    v.push_back(d * w.tp);  // rank 0's dp·cp group
  return v;  // pipeline first (trace ranks 0..P−1 are its stages), each rank once (d ≥ 1 is no stage's rank)
}

std::vector<int> parse_trace_ranks(std::string_view text, const Workload& w) {
  if (text == "default") return default_trace_ranks(w);
  std::vector<int> v;
  if (text == "all") {
    if (w.gpus() > kMaxTraceRanks)
      throw UsageError("--ranks-in-trace all: " + std::to_string(w.gpus()) + " ranks, more than the " +
                       std::to_string(kMaxTraceRanks) + " a trace holds; name a subset (0,8,16-23) or use default");
    for (int r = 0; r < w.gpus(); ++r) v.push_back(r);
    return v;
  }
  for (std::size_t at = 0; at <= text.size();) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string_view item = text.substr(at, comma - at);
    const std::size_t dash = item.find('-');
    const int lo = parse_rank(item.substr(0, dash), w);
    const int hi = dash == std::string_view::npos ? lo : parse_rank(item.substr(dash + 1), w);
    if (hi < lo) throw UsageError("--ranks-in-trace: the range '" + std::string(item) + "' runs backwards");
    if (hi - lo >= kMaxTraceRanks || v.size() + std::size_t(hi - lo) >= std::size_t(kMaxTraceRanks))
      throw UsageError("--ranks-in-trace names more than " + std::to_string(kMaxTraceRanks) + " ranks");
    for (int r = lo; r <= hi; ++r) v.push_back(r);
    at = comma + 1;
  }
  return sorted_unique(v);
}

namespace {

std::int64_t ns(double seconds) { return std::int64_t(std::llround(seconds * 1e9)); }

void record_memory(Trace& t, int index, EventKind kind, MemTag tag, double bytes, std::int64_t at) {
  if (bytes <= 0) return;
  t.record(
      Event{.begin_ns = at, .end_ns = at, .bytes = std::uint64_t(bytes), .rank = index, .tag = int(tag), .kind = kind});
}

// A micro-batch-chunk's activations on this stage: held from its F's end to the end of its B, or of
// its W where the schedule splits them (the weight gradients need the layers' inputs).
void record_activations(Trace& t, int index, const Span& s, std::int64_t offset, double bytes) {
  if (s.kind != SpanKind::action || s.micro_batch < 0) return;
  if (s.role.pass == Pass::forward)
    record_memory(t, index, EventKind::alloc, MemTag::activation, bytes, offset + ns(s.end));
  if (s.role.pass == Pass::weight || (s.role.pass == Pass::backward && !s.keeps_activations))
    record_memory(t, index, EventKind::free, MemTag::activation, bytes, offset + ns(s.end));
}

void record_span(Trace& t, int index, const Coord& c, const Span& s, std::int64_t offset, int step, int peer,
                 std::uint16_t label, std::uint64_t flow = 0) {
  Event e;
  e.begin_ns = offset + ns(s.begin);
  e.end_ns = offset + ns(s.end);
  e.bytes = std::uint64_t(s.bytes);
  e.rank = index;
  e.step = step;
  e.micro_batch = std::int16_t(s.micro_batch);
  e.label = label;
  e.flow_id = flow;
  e.axis = group_axis(s.axis);
  if (s.axis) e.group_rank = std::int16_t(axis_group_rank(c, s.axis));
  switch (s.kind) {
    case SpanKind::action:
    case SpanKind::compute:
    case SpanKind::host: e.kind = EventKind::compute; break;
    case SpanKind::collective:
      e.kind = EventKind::collective;
      if (s.on_comm_stream) e.stream = kStreamComm;  // an overlapped DP bucket runs beside compute
      break;
    case SpanKind::send: e.kind = EventKind::send, e.stream = kStreamComm, e.peer = peer; break;
    case SpanKind::step: e.kind = EventKind::phase; break;
  }
  t.record(e);
  if (s.kind == SpanKind::send && peer >= 0) {  // its receive on the traced peer, joined by the flow
    Event recv = e;
    recv.kind = EventKind::recv, recv.rank = peer, recv.peer = index, recv.label = 0, recv.stream = kStreamComm;
    t.record(recv);
  }
}

// One traced rank's steps: its stage's spans once per step, each step after the one before and
// the checkpoint save that follows every `checkpoints.every`-th step.
struct RankSteps {
  const Workload& w;
  const SimResult& r;
  const std::map<int, int>& index_of;
  std::uint16_t step_label, save_label;
  const std::vector<std::uint16_t>* span_labels;  // the stage's spans' label ids
};

void record_rank_steps(Trace& trace, const RankSteps& k, int rank, int index, int steps, double activation,
                       const SimCheckpoints& checkpoints) {
  const Coord c = coord_of(k.w, rank);
  const StageTimeline& tl = k.r.stages[std::size_t(c.pp)];
  double at = 0;  // the step's start, seconds
  for (int step = 0; step < steps; ++step) {
    const std::int64_t offset = ns(at);
    record_span(trace, index, c, {0, k.r.step_s, SpanKind::step, "", 0, -1, 0}, offset, step, -1, k.step_label);
    for (std::size_t j = 0; j < tl.spans.size(); ++j) {
      const Span& s = tl.spans[j];
      int peer = -1;
      if (s.kind == SpanKind::send) {  // to the stage of the next (activations) or previous (gradients) chunk
        const int to = rank + (s.to_stage - c.pp) * k.w.dp * k.w.cp * k.w.tp;
        if (auto p = k.index_of.find(to); p != k.index_of.end()) peer = p->second;
      }
      record_span(trace, index, c, s, offset, step, peer, (*k.span_labels)[j], peer >= 0 ? trace.next_flow_id() : 0);
      record_activations(trace, index, s, offset, activation);
    }
    at += k.r.step_s;
    if (checkpoints.every > 0 && (step + 1) % checkpoints.every == 0) {
      record_span(trace, index, c, {0, checkpoints.write_s, SpanKind::host, "", 0, -1, 0}, ns(at), step, -1,
                  k.save_label);
      at += checkpoints.write_s;
    }
  }
}

}  // namespace

void write_sim_trace(const Workload& w, const SimResult& r, const std::vector<int>& ranks, int steps,
                     const SimMemory& memory, const std::string& path, const std::map<std::string, std::string>& meta,
                     const SimCheckpoints& checkpoints) {
  Trace trace(int(ranks.size()));
  std::map<int, int> index_of;
  for (std::size_t i = 0; i < ranks.size(); ++i) index_of[ranks[i]] = int(i);
  nlohmann::json who = nlohmann::json::array();
  const std::uint16_t step_label =
      trace.label(pipeline::schedule_name(w.schedule), Role{.part = RunPart::timed, .schedule = w.schedule});
  const std::uint16_t save_label = trace.label("checkpoint save (synchronous)", Role{});
  std::vector<std::vector<std::uint16_t>> span_labels(
      r.stages.size());  // per stage: its spans' label ids, interned once
  for (std::size_t st = 0; st < r.stages.size(); ++st)
    for (const Span& s : r.stages[st].spans) span_labels[st].push_back(trace.label(s.label, s.role));
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const Coord c = coord_of(w, ranks[i]);
    who.push_back({{"trace_rank", i}, {"rank", ranks[i]}, {"pp", c.pp}, {"dp", c.dp}, {"tp", c.tp}});
    if (w.cp > 1) who.back()["cp"] = c.cp;
    for (const auto& [tag, bytes] :
         {std::pair{MemTag::param, memory.params}, {MemTag::grad, memory.grads}, {MemTag::optimizer, memory.optimizer}})
      record_memory(trace, int(i), EventKind::alloc, tag, bytes, 0);
    const double activation =  // one action's: a chunk of the stage's layers
        memory.activation_per_layer * double(w.stage_layers[std::size_t(c.pp)]) / w.chunks;
    const RankSteps k{w, r, index_of, step_label, save_label, &span_labels[std::size_t(c.pp)]};
    record_rank_steps(trace, k, ranks[i], int(i), steps, activation, checkpoints);
  }
  trace.set_meta(MetaKey::lab, "simulate");
  trace.set_meta(MetaKey::simulated, "true");
  trace.set_meta(MetaKey::schedule, pipeline::schedule_name(w.schedule));
  trace.set_meta(MetaKey::simulated_ranks, who.dump());
  trace.set_meta(MetaKey::micro_batches, std::to_string(w.micro_batches));
  if (int(ranks.size()) == w.gpus() && w.cp == 1)  // the whole grid traced: the topology view can draw it (no cp axis)
    trace.set_meta(MetaKey::grid, nlohmann::json{{"dp", w.dp}, {"tp", w.tp}, {"pp", w.pp}}.dump());
  if (memory.predicted_peak > 0) {  // the memory view's line: the planner's busiest GPU
    trace.set_meta(MetaKey::predicted_bytes_per_rank, std::to_string(memory.predicted_peak));
    trace.set_meta(MetaKey::predicted_bytes_formula, memory.predicted_text);
  }
  for (const auto& [k, v] : meta) trace.set_meta(k, v);
  write_chrome_trace(trace, path);
}

}  // namespace dtl::sim
