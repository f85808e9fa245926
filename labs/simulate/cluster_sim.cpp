// The step simulation (cluster_sim.h): the pipeline simulator times each stage's F/B list
// with action durations built from the layers' compute and TP all-reduces, then each stage's
// timeline is expanded into spans and closed with its DP collectives.
#include "labs/simulate/cluster_sim.h"

#include <algorithm>
#include <chrono>
#include <iterator>

#include "core/error.h"
#include "core/theory/step_model.h"

namespace dtl::sim {

std::vector<int> split_layers(int layers, int stages) {
  theory::ParallelConfig even;
  even.pp = stages;
  return theory::stage_layer_counts(layers, even);
}

namespace {

// An action's share of its stage: one chunk of v (interleaved), else the whole stage.
int action_layers(const Workload& w, int stage) { return w.stage_layers[std::size_t(stage)] / w.chunks; }
double action_dp_bytes(const Workload& w, int stage) { return w.dp_bytes[std::size_t(stage)] / w.chunks; }
double action_gather_bytes(const Workload& w, int stage) {
  return (w.dp_gather_bytes.empty() ? w.dp_bytes : w.dp_gather_bytes)[std::size_t(stage)] / w.chunks;
}
bool zero3_per_layer(const Workload& w) { return w.zero == 3 && w.zero3_prefetch >= 0; }

// The communication a ZeRO stage adds around each action (cluster_sim.h): the parameters
// or gradients of the layers that action computes.
double zero_before(const Workload& w, int stage) {
  return w.zero == 3 && !zero3_per_layer(w) ? w.dp_route.all_gather(action_gather_bytes(w, stage)) : 0;
}
double zero_after_backward(const Workload& w, int stage) {
  return w.zero >= 2 && !zero3_per_layer(w) ? w.dp_route.reduce_scatter(action_dp_bytes(w, stage)) : 0;
}

// One layer's compute on `stage`: measured seconds when the workload has them, else FLOPs / rate.
double compute_seconds(const Workload& w, int stage, bool fwd) {
  const std::vector<double>& measured = fwd ? w.stage_layer_forward_s : w.stage_layer_backward_s;
  if (!measured.empty()) return measured[std::size_t(stage)];
  return (fwd ? w.layer_forward_flops : w.layer_backward_flops) / w.flops_per_s;
}

// One TP collective as the layer pays it: the step model's (overlapped or not), else the all-reduce.
double tp_call_seconds(const Workload& w, bool fwd) {
  const double given = fwd ? w.tp_forward_s : w.tp_backward_s;
  return given >= 0 ? given : w.tp_route.all_reduce(w.tp_bytes);
}

// One layer's weight gradients (a zero-bubble schedule's W): measured or modelled, else FLOPs / rate.
double weight_seconds(const Workload& w, int stage) {
  if (!w.stage_layer_weight_s.empty()) return w.stage_layer_weight_s[std::size_t(stage)];
  return w.layer_weight_flops / w.flops_per_s;
}

double layer_seconds(const Workload& w, int stage, Pass op) {
  const bool fwd = op == Pass::forward;
  return compute_seconds(w, stage, fwd) + (fwd ? w.tp_calls_forward : w.tp_calls_backward) * tp_call_seconds(w, fwd) +
         (fwd ? w.cp_forward_exposed_s : w.cp_backward_exposed_s) + (fwd ? w.ep_forward_s : w.ep_backward_s);
}

// ZeRO-3's per-layer gathers (and backward's reduce-scatters) beside one action's layers.
theory::LayerOverlap zero3_overlap(const Workload& w, int stage, bool fwd) {
  const int L = action_layers(w, stage);
  const double gather = w.dp_route.all_gather(action_gather_bytes(w, stage) / L);
  const double scatter = fwd ? 0 : w.dp_route.reduce_scatter(action_dp_bytes(w, stage) / L);
  return theory::zero3_layers(L, layer_seconds(w, stage, fwd ? Pass::forward : Pass::backward), gather, scatter,
                              w.zero3_prefetch);
}

// The grid lab's --compute-us: the action lasts at least the floor (F) or twice it (B).
double floored(const Workload& w, bool fwd, double seconds) {
  return std::max(seconds, (fwd ? 1 : 2) * w.action_floor_s);
}

pipeline::ActionTimes stage_times(const Workload& w, int stage) {
  const int L = action_layers(w, stage);
  pipeline::ActionTimes t;
  if (zero3_per_layer(w)) {
    t.forward = zero3_overlap(w, stage, true).end, t.backward = zero3_overlap(w, stage, false).end;
    t.p2p = w.pp_route.send(w.pp_bytes);
    return t;
  }
  t.forward = zero_before(w, stage) + floored(w, true, L * layer_seconds(w, stage, Pass::forward));
  t.backward = zero_before(w, stage) + floored(w, false, L * layer_seconds(w, stage, Pass::backward)) +
               zero_after_backward(w, stage);
  t.weight = L * weight_seconds(w, stage);  // (only where the schedule splits B and W)
  t.p2p = w.pp_route.send(w.pp_bytes);
  return t;
}

void add(StageTimeline& tl, double& at, double seconds, SpanKind kind, std::string label, char axis, int m,
         double bytes, Role role = {}) {
  tl.spans.push_back({at, at + seconds, kind, std::move(label), axis, m, bytes, role});
  at += seconds;
  double& bucket = kind == SpanKind::compute ? tl.compute
                   : kind == SpanKind::host  ? tl.host
                   : axis == 't'             ? tl.tp
                   : axis == 'p'             ? tl.pp
                   : axis == 'c'             ? tl.cp
                   : axis == 'e'             ? tl.ep
                                             : tl.dp;
  bucket += seconds;
}

// The comm stream of a stage's last backward when the DP reduction overlaps it (dp_bucket_bytes):
// when its last bucket ends.
struct BucketStream {
  double free_at = 0;
};

// A collective on the comm stream, beside compute (an overlapped bucket, a ZeRO-3 layer's gather).
void add_beside(StageTimeline& tl, double begin, double seconds, std::string label, int m, double bytes,
                CollectiveKind kind) {
  Span s{begin, begin + seconds, SpanKind::collective, std::move(label), 'd', m, bytes, library_collective_role(kind)};
  s.on_comm_stream = true;
  tl.spans.push_back(s);
  tl.dp += seconds;
}

// ZeRO-0 all-reduces each bucket; ZeRO-1 (the distributed optimizer) reduce-scatters it, as
// Megatron's overlap_grad_reduce does with --use-distributed-optimizer (step_model.h's gradient_buckets).
void launch_buckets(const Workload& w, int stage, StageTimeline& tl, BucketStream& b, const pipeline::TimedAction& a) {
  const bool scatter = w.zero == 1;
  const auto seconds = [&](double bytes) {
    return scatter ? w.dp_route.reduce_scatter(bytes) : w.dp_route.all_reduce(bytes);
  };
  const double layer = (a.end - a.begin) / action_layers(w, stage);  // beside the action's layers (step_model.h)
  for (const theory::Bucket& k : theory::gradient_buckets(a.begin, layer, action_layers(w, stage),
                                                          action_dp_bytes(w, stage), w.dp_bucket_bytes, seconds)) {
    add_beside(tl, k.begin, k.end - k.begin,
               scatter ? "reduce_scatter gradients (bucket)" : "all_reduce gradients (bucket)", -1, k.bytes,
               scatter ? CollectiveKind::reduce_scatter : CollectiveKind::all_reduce);
    b.free_at = k.end;
  }
}

int first_layer_of(const Workload& w, int stage, int virtual_stage, int L) {
  if (w.chunks > 1) return virtual_stage * L;  // (interleaved: every stage holds the same layers, check())
  int f = 0;
  for (int s = 0; s < stage; ++s) f += w.stage_layers[std::size_t(s)];
  return f;
}

// Where an action sits in the schedule: its virtual stage, whether its output (F) or input
// gradient (B) leaves for another stage (a V's turn stays on the last stage), and whether its B
// is the input gradient only (the stage's list also holds its W).
struct ActionPlace {
  int virtual_stage = 0, to_stage = -1;  // to_stage: where its output or input gradient goes (-1: nowhere)
  bool sends = false, split = false;
};

ActionPlace place_of(const pipeline::Schedule& sch, const std::vector<std::vector<char>>& has_weight,
                     const pipeline::TimedAction& a) {
  const int vs = sch.virtual_stage(a.stage, a.action.chunk), V = sch.virtual_stages();
  const bool fwd = a.action.op == Pass::forward, bwd = a.action.op == Pass::backward;
  const int to = fwd ? vs + 1 : vs - 1;
  ActionPlace p;
  p.virtual_stage = vs;
  p.to_stage = (fwd || bwd) && to >= 0 && to < V ? sch.stage_of(to) : -1;
  p.sends = p.to_stage >= 0 && p.to_stage != a.stage;
  p.split = bwd && has_weight[std::size_t(a.stage)][std::size_t(a.action.micro_batch) * std::size_t(sch.config.chunks) +
                                                    std::size_t(a.action.chunk)] != 0;
  return p;
}

// A zero-bubble W, layer by layer in backward order: each layer's weight-gradient GEMMs. No
// communication; with `buckets`, the chunk's gradients are final after it and its DP buckets go.
void expand_weight_action(const Workload& w, int stage, const pipeline::TimedAction& a, int virtual_stage,
                          StageTimeline& tl, BucketStream* buckets) {
  const int m = a.action.micro_batch, L = action_layers(w, stage);
  tl.spans.push_back(
      {a.begin, a.end, SpanKind::action, pass_letter(Pass::weight), 0, m, 0, Role{.pass = Pass::weight}});
  const int first_layer = first_layer_of(w, stage, virtual_stage, L);
  double at = a.begin;
  for (int i = 0; i < L; ++i)
    add(tl, at, weight_seconds(w, stage), SpanKind::compute,
        "layer " + std::to_string(first_layer + L - 1 - i) + " weight gradients", 0, m, 0,
        Role{.pass = Pass::weight, .block = std::int16_t(first_layer + L - 1 - i)});
  if (buckets) launch_buckets(w, stage, tl, *buckets, a);
}

// One F or B action, layer by layer, starting at `at`. `buckets`: this is the stage's last
// backward and its DP reduction overlaps it (null otherwise). ZeRO-3 per layer: each layer waits
// for its gather (step_model.h's zero3_layers), the gathers and reduce-scatters on the comm stream.
void expand_action(const Workload& w, const ActionPlace& place, const pipeline::TimedAction& a, StageTimeline& tl,
                   BucketStream* buckets) {
  const int stage = a.stage;
  const bool fwd = a.action.op == Pass::forward;
  const int m = a.action.micro_batch, L = action_layers(w, stage);
  const int virtual_stage = place.virtual_stage;
  const Pass pass = fwd ? Pass::forward : Pass::backward;
  tl.spans.push_back({a.begin, a.end, SpanKind::action, pass_letter(pass), 0, m, 0, Role{.pass = pass}});
  tl.spans.back().keeps_activations = place.split;
  const Role all_gather = library_collective_role(CollectiveKind::all_gather);
  double at = a.begin;
  const double ag = zero_before(w, stage);
  if (ag > 0)
    add(tl, at, ag, SpanKind::collective, "all_gather parameters", 'd', m, action_gather_bytes(w, stage), all_gather);
  const double compute = compute_seconds(w, stage, fwd) - (place.split ? weight_seconds(w, stage) : 0),
               tp = tp_call_seconds(w, fwd);
  const bool per_layer = zero3_per_layer(w);
  const theory::LayerOverlap z = per_layer ? zero3_overlap(w, stage, fwd) : theory::LayerOverlap{};
  const int first_layer = first_layer_of(w, stage, virtual_stage, L);
  for (int i = 0; i < L; ++i) {
    const int layer = fwd ? first_layer + i : first_layer + L - 1 - i;
    const std::size_t k = std::size_t(i);
    if (per_layer) {
      add_beside(tl, a.begin + z.gather_begin[k], w.dp_route.all_gather(action_gather_bytes(w, stage) / L),
                 "all_gather layer parameters", m, action_gather_bytes(w, stage) / L, CollectiveKind::all_gather);
      at = a.begin + z.compute_begin[k];
    }
    add(tl, at, compute, SpanKind::compute,
        "layer " + std::to_string(layer) +
            (fwd           ? " forward"
             : place.split ? " input gradients"
                           : " backward"),
        0, m, 0, Role{.pass = pass, .block = std::int16_t(layer)});
    for (int c = 0; c < (fwd ? w.tp_calls_forward : w.tp_calls_backward) && w.tp > 1; ++c)
      add(tl, at, tp, SpanKind::collective, "all_reduce activations", 't', m, w.tp_bytes,
          library_collective_role(CollectiveKind::all_reduce));
    if (w.cp > 1)  // the exchange's time not hidden behind attention blocks (context_parallel.h)
      add(tl, at, fwd ? w.cp_forward_exposed_s : w.cp_backward_exposed_s, SpanKind::collective,
          fwd ? w.cp_forward_label : w.cp_backward_label, 'c', m, fwd ? w.cp_forward_bytes : w.cp_backward_bytes,
          Role{.pass = pass});
    if (w.ep_forward_s > 0)  // the experts' dispatch and combine all-to-alls (step_model.h)
      add(tl, at, fwd ? w.ep_forward_s : w.ep_backward_s, SpanKind::collective, "all_to_all dispatch and combine", 'e',
          m, fwd ? w.ep_forward_bytes : w.ep_backward_bytes, library_collective_role(CollectiveKind::all_to_all));
    if (per_layer && !fwd)
      add_beside(tl, a.begin + z.scatter_begin[k], w.dp_route.reduce_scatter(action_dp_bytes(w, stage) / L),
                 "reduce_scatter layer gradients", m, action_dp_bytes(w, stage) / L, CollectiveKind::reduce_scatter);
  }
  if (buckets) launch_buckets(w, stage, tl, *buckets, a);
  const double wait = (fwd ? 1 : 2) * w.action_floor_s - (at - a.begin - ag);  // --compute-us: the rest of the floor
  if (wait > 0) add(tl, at, wait, SpanKind::host, "paced (--compute-us)", 0, m, 0);
  const double rs = fwd ? 0 : zero_after_backward(w, stage);
  if (rs > 0)
    add(tl, at, rs, SpanKind::collective, "reduce_scatter gradients", 'd', m, action_dp_bytes(w, stage),
        library_collective_role(CollectiveKind::reduce_scatter));
  if (place.sends) {
    double send_at = a.end;
    add(tl, send_at, w.pp_route.send(w.pp_bytes), SpanKind::send, fwd ? "send activation" : "send gradient", 'p', m,
        w.pp_bytes, Role{.pass = pass});
    tl.spans.back().to_stage = place.to_stage;
  }
}

// The end of a stage's step, once its last backward is done: the gradient synchronization
// (ZeRO-0's all-reduce or ZeRO-1's reduce-scatter, unless the buckets overlapped it: then the
// step waits for the last bucket), the optimizer step (stage_host_s), then ZeRO-1/2's
// all-gather of the updated parameters (ZeRO-3 gathers them before each use instead).
void close_step(const Workload& w, int stage, StageTimeline& tl, double last_action_end, const BucketStream* buckets) {
  double at = buckets ? std::max(last_action_end, buckets->free_at) : last_action_end;
  const double bytes = w.dp_bytes[std::size_t(stage)];
  const bool dp = w.replicas() > 1;
  if (dp && w.zero == 0 && !buckets)
    add(tl, at, w.dp_route.all_reduce(bytes), SpanKind::collective, "all_reduce gradients", 'd', -1, bytes,
        library_collective_role(CollectiveKind::all_reduce));
  if (dp && w.zero == 1 && !buckets)
    add(tl, at, w.dp_route.reduce_scatter(bytes), SpanKind::collective, "reduce_scatter gradients", 'd', -1, bytes,
        library_collective_role(CollectiveKind::reduce_scatter));
  tl.dp_exposed = at - last_action_end;
  if (!w.stage_host_s.empty())
    add(tl, at, w.stage_host_s[std::size_t(stage)], SpanKind::host, w.host_label, 0, -1, 0,
        Role{.pass = Pass::optimizer});
  if (dp && (w.zero == 1 || w.zero == 2)) {
    const double gathered = (w.dp_gather_bytes.empty() ? w.dp_bytes : w.dp_gather_bytes)[std::size_t(stage)];
    const double ag = w.dp_route.all_gather(gathered);
    add(tl, at, ag, SpanKind::collective, "all_gather parameters", 'd', -1, gathered,
        library_collective_role(CollectiveKind::all_gather));
    tl.dp_exposed += ag;
  }
  if (w.step_extra_s > 0)
    add(tl, at, w.step_extra_s, SpanKind::collective, "all_reduce loss", 'd', -1, 8,
        library_collective_role(CollectiveKind::all_reduce));
  tl.end = at;
  for (const Span& s : tl.spans) tl.end = std::max(tl.end, s.end);
  // (an overlapped bucket was recorded when its layer finished, and may start after later spans)
  std::stable_sort(tl.spans.begin(), tl.spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
}

void check(const Workload& w) {
  if (w.pp < 1 || int(w.stage_layers.size()) != w.pp || int(w.dp_bytes.size()) != w.pp)
    throw UsageError("the workload needs one layer count and one gradient size per stage");
  for (int L : w.stage_layers)
    if (L < 1) throw UsageError("every pipeline stage needs at least one layer");
  if (w.chunks != pipeline::config_for(w.schedule, w.pp, w.micro_batches, w.chunks).chunks)
    throw UsageError(std::string("model chunks per stage (--chunks ") + std::to_string(w.chunks) + ") apply to " +
                     "the interleaved schedules; zb-v and dualpipev run 2, the others 1");
  for (int L : w.stage_layers)
    if (w.chunks > 1 && (L != w.stage_layers.front() || L % w.chunks != 0))
      throw UsageError(std::string(pipeline::schedule_name(w.schedule)) +
                       " needs the same layers on every stage, a multiple of the " + std::to_string(w.chunks) +
                       " chunks: layers a multiple of pp · chunks = " + std::to_string(w.pp * w.chunks));
  if (!(w.flops_per_s > 0)) throw UsageError("the compute rate must be above 0 FLOP/s");
  if (w.dp_bucket_bytes > 0 && w.zero >= 2)
    throw UsageError(
        "overlapping the DP gradient reduction with backward applies to ZeRO-0/1 (ZeRO-2/3 reduce-scatter "
        "after every micro-batch's backward already): drop the bucket size or use --zero 0 or 1");
  for (const std::vector<double>* v : {&w.stage_layer_forward_s, &w.stage_layer_backward_s, &w.stage_host_s})
    if (!v->empty() && int(v->size()) != w.pp)
      throw UsageError("measured layer and host times need one value per pipeline stage");
}

}  // namespace

SimResult simulate_step(const Workload& w) {
  const auto t0 = std::chrono::steady_clock::now();
  check(w);
  const pipeline::Schedule schedule = pipeline::make_schedule(w.schedule, {w.pp, w.micro_batches, w.chunks});
  std::vector<pipeline::ActionTimes> times;
  times.reserve(std::size_t(w.pp));
  for (int s = 0; s < w.pp; ++s) times.push_back(stage_times(w, s));
  const pipeline::Simulation pipe = pipeline::simulate(schedule, times);
  SimResult r;
  r.stages.resize(std::size_t(w.pp));
  std::vector<double> last_end(std::size_t(w.pp), 0.0);
  // The DP buckets overlap the action after which each chunk's gradients are final on each
  // stage (its last backward; a zero-bubble schedule's last W): step_model.h's buckets_end.
  std::vector<std::vector<const pipeline::TimedAction*>> last_gradient;
  std::vector<std::vector<char>> has_weight(std::size_t(w.pp));  // per stage, per (m, chunk): a W of its own
  for (int s = 0; s < w.pp; ++s) {
    last_gradient.push_back(pipeline::last_gradient_actions(pipe, s, w.chunks));
    has_weight[std::size_t(s)].assign(std::size_t(w.micro_batches) * std::size_t(w.chunks), 0);
    for (const pipeline::Action& a : schedule.stages[std::size_t(s)])
      if (a.op == Pass::weight)
        has_weight[std::size_t(s)][std::size_t(a.micro_batch) * std::size_t(w.chunks) + std::size_t(a.chunk)] = 1;
  }
  const bool overlap = w.dp_bucket_bytes > 0 && w.replicas() > 1 && w.zero <= 1;
  std::vector<BucketStream> buckets(std::size_t(w.pp));
  for (const pipeline::TimedAction& a : pipe.actions) {
    const bool last = &a == last_gradient[std::size_t(a.stage)][std::size_t(a.action.chunk)];
    BucketStream* b = overlap && last ? &buckets[std::size_t(a.stage)] : nullptr;
    const ActionPlace place = place_of(schedule, has_weight, a);
    if (a.action.op == Pass::weight)
      expand_weight_action(w, a.stage, a, place.virtual_stage, r.stages[std::size_t(a.stage)], b);
    else
      expand_action(w, place, a, r.stages[std::size_t(a.stage)], b);
    last_end[std::size_t(a.stage)] = std::max(last_end[std::size_t(a.stage)], a.end);
  }
  for (int s = 0; s < w.pp; ++s) {
    close_step(w, s, r.stages[std::size_t(s)], last_end[std::size_t(s)], overlap ? &buckets[std::size_t(s)] : nullptr);
    r.step_s = std::max(r.step_s, r.stages[std::size_t(s)].end);
  }
  r.pipeline_bubble = pipe.bubble_fraction();
  r.pipeline_bubble_tiled = pipe.bubble_tiled();
  r.tokens_per_s = r.step_s > 0 ? w.tokens_per_step / r.step_s : 0;
  const double peak = double(w.gpus()) * w.peak_flops_per_gpu;
  r.mfu = r.step_s > 0 && peak > 0 ? w.model_flops_per_step / (r.step_s * peak) : 0;
  r.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace dtl::sim
