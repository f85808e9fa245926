// The step simulation (cluster_sim.h): the pipeline simulator times each stage's F/B list
// with action durations built from the layers' compute and TP all-reduces, then each stage's
// timeline is expanded into spans and closed with its DP collectives.
#include "labs/simulate/cluster_sim.h"

#include <algorithm>
#include <chrono>
#include <iterator>

#include "core/error.h"

namespace dtl::sim {

namespace {
constexpr const char* kCommAlgoNames[] = {"ring", "tree", "hierarchical"};  // in CommAlgo's order
}  // namespace

CommAlgo parse_comm_algo(std::string_view name) {
  for (std::size_t i = 0; i < std::size(kCommAlgoNames); ++i)
    if (name == kCommAlgoNames[i]) return CommAlgo(i);
  throw UsageError("--algo is ring, tree or hierarchical, not '" + std::string(name) + "'");
}

const char* comm_algo_name(CommAlgo a) {
  return std::size_t(a) < std::size(kCommAlgoNames) ? kCommAlgoNames[std::size_t(a)] : "?";
}

namespace {

// Ring reduce-scatter or all-gather of a whole vector of `bytes`: (n−1)α + (n−1)/n·bytes/β.
double ring_half(int n, double bytes, theory::Link l) {
  return n < 2 ? 0 : (n - 1) * l.alpha_s + double(n - 1) / n * bytes / l.beta_Bps;
}

// Only when every node holds the same share of the group (size / per_node nodes of per_node
// each); otherwise (a stride that does not divide the node) the group is treated as one ring.
bool hierarchy_helps(const AxisRoute& r) {
  return r.algo == CommAlgo::hierarchical && r.crosses_nodes() && r.per_node > 1 && r.size % r.per_node == 0;
}

}  // namespace

double AxisRoute::all_reduce(double bytes) const {
  if (size < 2) return 0;
  if (algo == CommAlgo::tree)
    return call_overhead_s + theory::all_reduce_cost(AlgorithmKind::tree, size, bytes, slowest()).time_s;
  if (!hierarchy_helps(*this)) return call_overhead_s + 2 * ring_half(size, bytes, slowest());
  // Reduce-scatter in the node, all-reduce of one node's 1/k across nodes, all-gather in the node.
  const int k = per_node, nodes = size / per_node;
  return call_overhead_s + 2 * ring_half(k, bytes, intra) + 2 * ring_half(nodes, bytes / k, inter);
}

double AxisRoute::reduce_scatter(double bytes) const {
  if (size < 2) return 0;
  if (!hierarchy_helps(*this)) return call_overhead_s + ring_half(size, bytes, slowest());
  const int k = per_node, nodes = size / per_node;
  return call_overhead_s + ring_half(k, bytes, intra) + ring_half(nodes, bytes / k, inter);
}

double AxisRoute::all_gather(double bytes) const { return reduce_scatter(bytes); }  // the same ring, reversed

std::string AxisRoute::describe(const char* axis, bool point_to_point) const {
  std::string s = std::string(axis) + ": " + std::to_string(size) + " ranks, ";
  if (size < 2) return s + "no communication";
  if (!crosses_nodes())
    s += "inside one node (NVLink)";
  else if (per_node == 1)
    s += "one per node (InfiniBand)";
  else
    s += (size % per_node ? "up to " : "") + std::to_string(per_node) + " per node over " +
         std::to_string((size + per_node - 1) / per_node) + " nodes (NVLink + InfiniBand)";
  if (point_to_point) return s + ", point-to-point between neighbouring stages";
  const CommAlgo shown = algo == CommAlgo::hierarchical && !hierarchy_helps(*this) ? CommAlgo::ring : algo;
  return s + ", " + comm_algo_name(shown) +
         (shown == CommAlgo::hierarchical ? " (ring in node, ring across nodes)" : "");
}

AxisRoute route(int size, long stride, int gpus_per_node, theory::Link intra, theory::Link inter, CommAlgo algo) {
  AxisRoute r;
  r.size = size;
  r.intra = intra;
  r.inter = inter;
  r.algo = algo;
  r.per_node = 0;
  for (long i = 0; i < size; ++i) r.per_node += (i * stride) / gpus_per_node == 0 ? 1 : 0;
  return r;
}

std::vector<int> split_layers(int layers, int stages) {
  std::vector<int> out(std::size_t(stages), layers / stages);
  for (int s = 0; s < layers % stages; ++s) ++out[std::size_t(s)];
  return out;
}

namespace {

// An action's share of its stage: one chunk of v (interleaved), else the whole stage.
int action_layers(const Workload& w, int stage) { return w.stage_layers[std::size_t(stage)] / w.chunks; }
double action_dp_bytes(const Workload& w, int stage) { return w.dp_bytes[std::size_t(stage)] / w.chunks; }

// The communication a ZeRO stage adds around each action (cluster_sim.h): the parameters
// or gradients of the layers that action computes.
double zero_before(const Workload& w, int stage) {
  return w.zero == 3 ? w.dp_route.all_gather(action_dp_bytes(w, stage)) : 0;
}
double zero_after_backward(const Workload& w, int stage) {
  return w.zero >= 2 ? w.dp_route.reduce_scatter(action_dp_bytes(w, stage)) : 0;
}

// One layer's compute on `stage`: measured seconds when the workload has them, else FLOPs / rate.
double compute_seconds(const Workload& w, int stage, bool fwd) {
  const std::vector<double>& measured = fwd ? w.stage_layer_forward_s : w.stage_layer_backward_s;
  if (!measured.empty()) return measured[std::size_t(stage)];
  return (fwd ? w.layer_forward_flops : w.layer_backward_flops) / w.flops_per_s;
}

double layer_seconds(const Workload& w, int stage, Pass op) {
  const bool fwd = op == Pass::forward;
  return compute_seconds(w, stage, fwd) +
         (fwd ? w.tp_calls_forward : w.tp_calls_backward) * w.tp_route.all_reduce(w.tp_bytes) +
         (fwd ? w.cp_forward_exposed_s : w.cp_backward_exposed_s);
}

// The grid lab's --compute-us: the action lasts at least the floor (F) or twice it (B).
double floored(const Workload& w, bool fwd, double seconds) {
  return std::max(seconds, (fwd ? 1 : 2) * w.action_floor_s);
}

pipeline::ActionTimes stage_times(const Workload& w, int stage) {
  const int L = action_layers(w, stage);
  pipeline::ActionTimes t;
  t.forward = zero_before(w, stage) + floored(w, true, L * layer_seconds(w, stage, Pass::forward));
  t.backward = zero_before(w, stage) + floored(w, false, L * layer_seconds(w, stage, Pass::backward)) +
               zero_after_backward(w, stage);
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
                                             : tl.dp;
  bucket += seconds;
}

// The comm stream of a stage's last backward when the DP all-reduce overlaps it (dp_bucket_bytes):
// a bucket launches once its layers' gradients are final, after the bucket before it.
struct BucketStream {
  double filled = 0;   // bytes of layers done, not yet launched
  double free_at = 0;  // the stream's previous bucket ends
};

// ZeRO-0 all-reduces each bucket; ZeRO-1 (the distributed optimizer) reduce-scatters it, as
// Megatron's overlap_grad_reduce does with --use-distributed-optimizer.
void launch_bucket(const Workload& w, StageTimeline& tl, BucketStream& b, double ready_at) {
  const bool scatter = w.zero == 1;
  const double begin = std::max(ready_at, b.free_at);
  const double seconds = scatter ? w.dp_route.reduce_scatter(b.filled) : w.dp_route.all_reduce(b.filled);
  Span s{begin,
         begin + seconds,
         SpanKind::collective,
         scatter ? "reduce_scatter gradients (bucket)" : "all_reduce gradients (bucket)",
         'd',
         -1,
         b.filled,
         library_collective_role(scatter ? CollectiveKind::reduce_scatter : CollectiveKind::all_reduce)};
  s.on_comm_stream = true;
  tl.spans.push_back(s);
  tl.dp += seconds;
  b.free_at = s.end, b.filled = 0;
}

// One F or B action, layer by layer, starting at `at`. `buckets`: this is the stage's last
// backward and its DP all-reduce overlaps it (null otherwise).
void expand_action(const Workload& w, int stage, const pipeline::TimedAction& a, StageTimeline& tl,
                   BucketStream* buckets) {
  const bool fwd = a.action.op == Pass::forward;
  const int m = a.action.micro_batch, L = action_layers(w, stage);
  const int virtual_stage = a.action.chunk * w.pp + stage, last_virtual = w.pp * w.chunks - 1;
  const Pass pass = fwd ? Pass::forward : Pass::backward;
  tl.spans.push_back({a.begin, a.end, SpanKind::action, pass_letter(pass), 0, m, 0, Role{.pass = pass}});
  const Role all_gather = library_collective_role(CollectiveKind::all_gather);
  double at = a.begin;
  const double ag = zero_before(w, stage);
  if (ag > 0)
    add(tl, at, ag, SpanKind::collective, "all_gather parameters", 'd', m, action_dp_bytes(w, stage), all_gather);
  const double compute = compute_seconds(w, stage, fwd);
  const double tp = w.tp_route.all_reduce(w.tp_bytes);
  const int first_layer = [&] {  // (interleaved: every stage holds the same layers, check())
    if (w.chunks > 1) return virtual_stage * L;
    int f = 0;
    for (int s = 0; s < stage; ++s) f += w.stage_layers[std::size_t(s)];
    return f;
  }();
  for (int i = 0; i < L; ++i) {
    const int layer = fwd ? first_layer + i : first_layer + L - 1 - i;
    add(tl, at, compute, SpanKind::compute, "layer " + std::to_string(layer) + (fwd ? " forward" : " backward"), 0, m,
        0, Role{.pass = pass, .block = std::int16_t(layer)});
    for (int c = 0; c < (fwd ? w.tp_calls_forward : w.tp_calls_backward) && w.tp > 1; ++c)
      add(tl, at, tp, SpanKind::collective, "all_reduce activations", 't', m, w.tp_bytes,
          library_collective_role(CollectiveKind::all_reduce));
    if (w.cp > 1)  // the exchange's time not hidden behind attention blocks (context_parallel.h)
      add(tl, at, fwd ? w.cp_forward_exposed_s : w.cp_backward_exposed_s, SpanKind::collective,
          fwd ? w.cp_forward_label : w.cp_backward_label, 'c', m, fwd ? w.cp_forward_bytes : w.cp_backward_bytes,
          Role{.pass = pass});
    if (buckets) {  // layer `layer`'s gradients are final: into the bucket, launched once full
      buckets->filled += action_dp_bytes(w, stage) / L;
      if (buckets->filled >= w.dp_bucket_bytes || i + 1 == L) launch_bucket(w, tl, *buckets, at);
    }
  }
  const double wait = (fwd ? 1 : 2) * w.action_floor_s - (at - a.begin - ag);  // --compute-us: the rest of the floor
  if (wait > 0) add(tl, at, wait, SpanKind::host, "paced (--compute-us)", 0, m, 0);
  const double rs = fwd ? 0 : zero_after_backward(w, stage);
  if (rs > 0)
    add(tl, at, rs, SpanKind::collective, "reduce_scatter gradients", 'd', m, action_dp_bytes(w, stage),
        library_collective_role(CollectiveKind::reduce_scatter));
  const bool sends = fwd ? virtual_stage < last_virtual : virtual_stage > 0;
  if (sends) {
    double send_at = a.end;
    add(tl, send_at, w.pp_route.send(w.pp_bytes), SpanKind::send, fwd ? "send activation" : "send gradient", 'p', m,
        w.pp_bytes, Role{.pass = pass});
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
    const double ag = w.dp_route.all_gather(bytes);
    add(tl, at, ag, SpanKind::collective, "all_gather parameters", 'd', -1, bytes,
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
  if (w.chunks < 1 || (w.chunks > 1 && w.schedule != pipeline::ScheduleKind::interleaved))
    throw UsageError("model chunks per stage (--chunks) apply to the interleaved schedule only");
  for (int L : w.stage_layers)
    if (w.chunks > 1 && (L != w.stage_layers.front() || L % w.chunks != 0))
      throw UsageError("the interleaved schedule needs the same layers on every stage, a multiple of the " +
                       std::to_string(w.chunks) +
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
  for (int s = 0; s < w.pp; ++s) times.push_back(stage_times(w, s));
  const pipeline::Simulation pipe = pipeline::simulate(schedule, times);
  SimResult r;
  r.stages.resize(std::size_t(w.pp));
  std::vector<double> last_end(std::size_t(w.pp), 0.0);
  // The DP buckets overlap each chunk's last backward on each stage (one chunk but with the
  // interleaved schedule): after it, that chunk's gradients are final.
  std::vector<std::vector<const pipeline::TimedAction*>> last_backward(
      std::size_t(w.pp), std::vector<const pipeline::TimedAction*>(std::size_t(w.chunks)));
  for (const pipeline::TimedAction& a : pipe.actions) {
    const pipeline::TimedAction*& last = last_backward[std::size_t(a.stage)][std::size_t(a.action.chunk)];
    if (a.action.op == Pass::backward && (!last || a.end >= last->end)) last = &a;
  }
  const bool overlap = w.dp_bucket_bytes > 0 && w.replicas() > 1 && w.zero <= 1;
  std::vector<BucketStream> buckets(std::size_t(w.pp));
  for (const pipeline::TimedAction& a : pipe.actions) {
    const bool last = &a == last_backward[std::size_t(a.stage)][std::size_t(a.action.chunk)];
    BucketStream* b = overlap && last ? &buckets[std::size_t(a.stage)] : nullptr;
    expand_action(w, a.stage, a, r.stages[std::size_t(a.stage)], b);
    last_end[std::size_t(a.stage)] = std::max(last_end[std::size_t(a.stage)], a.end);
  }
  for (int s = 0; s < w.pp; ++s) {
    close_step(w, s, r.stages[std::size_t(s)], last_end[std::size_t(s)], overlap ? &buckets[std::size_t(s)] : nullptr);
    r.step_s = std::max(r.step_s, r.stages[std::size_t(s)].end);
  }
  r.pipeline_bubble = pipe.bubble_fraction();
  r.tokens_per_s = r.step_s > 0 ? w.tokens_per_step / r.step_s : 0;
  const double peak = double(w.gpus()) * w.peak_flops_per_gpu;
  r.mfu = r.step_s > 0 && peak > 0 ? w.model_flops_per_step / (r.step_s * peak) : 0;
  r.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace dtl::sim
