// The step's components and its 1F1B time (step_model.h).
#include "core/theory/step_model.h"

#include <algorithm>

#include "core/theory/kernel_time.h"
#include "core/theory/schedule.h"
#include "core/theory/zero.h"

namespace dtl::theory {

namespace {

constexpr double kBytes16 = 2;  // activations, gradients and parameters travel in 16 bits

// Seconds per layer call from the shapes; the LM head spread over the last stage's layers.
void time_layers(const Plan& p, StepComponents& k) {
  const auto& cfg = p.config;
  const LayerTime layer = transformer_layer_time(p.cluster, p.model, cfg);
  const LayerTime head = lm_head_time(p.cluster, p.model, cfg.micro_batch_size, cfg.tp, cfg.cp);
  // A TP collective exposed, or overlapped with the GEMM beside it: each of a pass's calls hides
  // behind its share of the layer's linear GEMMs (practice.h)
  const bool overlapped = cfg.practice.tp_comm == CommOverlap::overlapped;
  k.tp_forward_s = overlapped ? std::max(0.0, k.tp_s - layer.linear_forward_s / k.tp_calls_forward) : k.tp_s;
  k.tp_backward_s = overlapped ? std::max(0.0, k.tp_s - layer.linear_backward_s / k.tp_calls_backward) : k.tp_s;
  k.layer_forward_s.assign(k.stage_layers.size(), layer.forward_s());
  k.layer_backward_s.assign(k.stage_layers.size(), layer.backward_s());
  k.layer_weight_s.assign(k.stage_layers.size(), layer.weight_gradient_s);
  const double last_layers = k.stage_layers.back();
  k.layer_forward_s.back() += head.forward_s() / last_layers;
  k.layer_backward_s.back() += head.backward_s() / last_layers;
  k.layer_weight_s.back() += head.weight_gradient_s / last_layers;
  if (cfg.cp < 2) return;
  // Ring attention's hops beyond the blocks they overlap (context_parallel.h); full
  // recomputation reruns the forward's exchange in backward.
  const Link cp_link =
      group_per_node(cfg.cp, cfg.tp, p.cluster.gpus_per_node) < cfg.cp ? p.cluster.inter : p.cluster.intra;
  const int reruns = cfg.recompute == Recompute::full ? 1 : 0;
  for (const CpLine& l : cp_lines(p.model, cfg, cp_link, layer.block_forward_s, layer.block_backward_s)) {
    const double bytes = l.calls * l.bytes_per_call;
    (l.backward ? k.cp_backward_s : k.cp_forward_s) += l.exposed_s;
    (l.backward ? k.cp_backward_bytes : k.cp_forward_bytes) += bytes;
    if (!l.backward) k.cp_backward_s += reruns * l.exposed_s, k.cp_backward_bytes += reruns * bytes;
  }
}

// Each stage's gradient collectives over the dp·cp replicas and its AdamW step (memory-bound:
// grad + 2·K + param bytes per parameter, on 1/(dp·cp) of them with ZeRO ≥ 1).
void time_data_parallel(const Plan& p, StepComponents& k) {
  const auto& cfg = p.config;
  const auto& c = p.cluster;
  const int replicas = cfg.dp * cfg.cp;
  k.dp_fabric = cluster_fabric(c, replicas, group_per_node(replicas, cfg.tp, c.gpus_per_node));
  const double touched = optimizer_step_bytes(zero_precision(cfg.convention));
  const double shards = cfg.zero >= 1 ? double(replicas) : 1;
  auto nccl = [&](CollectiveKind what, double bytes) { return replicas > 1 ? nccl_time(what, bytes, k.dp_fabric) : 0; };
  const bool overlap = cfg.practice.dp_comm == CommOverlap::overlapped && cfg.zero <= 1 && replicas > 1;
  k.dp_bucket_bytes = overlap ? cfg.practice.dp_bucket_bytes : 0;
  k.zero3_prefetch = cfg.practice.zero3_prefetch;
  // this GPU's parameters: the dense part and its E/ep experts (the experts' gradients are reduced
  // with the dense ones over dp·cp here; the ledger times them on their own dp/ep group)
  const double experts = p.model.expert_parameters(), own = p.psi - experts + experts / cfg.ep;
  for (int L : k.stage_layers) {
    const double params = own * L / p.model.layers / cfg.tp;
    const double grads = params * cfg.practice.grad_bytes(), weights = params * kBytes16;  // reduced, gathered
    k.dp_bytes.push_back(grads);
    k.dp_gather_bytes.push_back(weights);
    k.dp_all_reduce_s.push_back(nccl(CollectiveKind::all_reduce, grads));
    k.dp_reduce_scatter_s.push_back(nccl(CollectiveKind::reduce_scatter, grads));
    k.dp_all_gather_s.push_back(nccl(CollectiveKind::all_gather, weights));
    k.zero3_gather_s.push_back(nccl(CollectiveKind::all_gather, weights / L));  // per layer (ZeRO-3)
    k.zero3_scatter_s.push_back(nccl(CollectiveKind::reduce_scatter, grads / L));
    k.optimizer_s.push_back(params / shards * touched / c.memory_Bps);
  }
}

}  // namespace

int group_per_node(int size, long stride, int gpus_per_node) {
  int n = 0;
  for (long i = 0; i < size; ++i) n += (i * stride) / gpus_per_node == 0 ? 1 : 0;
  return n;
}

double group_collective_s(const ClusterSpec& c, CollectiveKind what, double bytes, int size, long stride) {
  if (size < 2) return 0;
  return nccl_time(what, bytes, cluster_fabric(c, size, group_per_node(size, stride, c.gpus_per_node)));
}

StepComponents step_components(const Plan& p) {
  const auto& m = p.model;
  const auto& c = p.cluster;
  const auto& cfg = p.config;
  StepComponents k;
  k.stage_layers = stage_layer_counts(m.layers, cfg);
  k.tp_calls_backward = cfg.recompute == Recompute::full ? 4 : 2;
  const double sbh = double(cfg.micro_batch_size) * m.seq / cfg.cp * m.hidden;  // this GPU's s/cp positions
  k.tp_bytes = sbh * kBytes16;
  k.tp_fabric = cluster_fabric(c, cfg.tp, group_per_node(cfg.tp, 1, c.gpus_per_node));
  k.tp_s = cfg.tp > 1 ? nccl_time(CollectiveKind::all_reduce, k.tp_bytes, k.tp_fabric) : 0;
  if (m.experts > 0 &&
      cfg.ep > 1) {  // NCCL's all-to-all is grouped send/recv: (R−1)/R of it leaves, as an all-gather's
    k.ep_calls_backward = cfg.recompute == Recompute::full ? 4 : 2;
    k.ep_bytes = sbh / cfg.tp * m.top_k * kBytes16;
    k.ep_fabric = cluster_fabric(c, cfg.ep, group_per_node(cfg.ep, long(cfg.tp) * cfg.cp, c.gpus_per_node));
    k.ep_s = nccl_time(CollectiveKind::all_gather, k.ep_bytes, k.ep_fabric);
  }
  time_layers(p, k);  // (after tp_s: an overlapped collective hides behind the layer's GEMMs)
  k.pp_bytes = sbh / cfg.tp * kBytes16;
  const long pp_stride = long(cfg.tp) * cfg.cp * cfg.dp;
  const Link pp_link = group_per_node(cfg.pp, pp_stride, c.gpus_per_node) < cfg.pp ? c.inter : c.intra;
  k.pp_send_s = cfg.pp > 1 ? pp_link.alpha_s + k.pp_bytes / pp_link.beta_Bps : 0;
  time_data_parallel(p, k);
  return k;
}

LayerOverlap zero3_layers(int layers, double layer_s, double gather_s, double scatter_s, int prefetch) {
  LayerOverlap o;
  double gather_end = 0, compute_end = 0, scatter_end = 0;
  for (int i = 0; i < layers; ++i) {
    double may_start = 0;  // the layer whose start (prefetch ≥ 1) or end (0) frees the gather
    if (prefetch == 0)
      may_start = compute_end;
    else if (i >= prefetch)
      may_start = o.compute_begin[std::size_t(i - prefetch)];
    o.gather_begin.push_back(std::max(gather_end, may_start));
    gather_end = o.gather_begin.back() + gather_s;
    o.compute_begin.push_back(std::max(compute_end, gather_end));
    compute_end = o.compute_begin.back() + layer_s;
    o.scatter_begin.push_back(std::max(scatter_end, compute_end));
    scatter_end = scatter_s > 0 ? o.scatter_begin.back() + scatter_s : scatter_end;
  }
  o.end = std::max(compute_end, scatter_end);
  return o;
}

namespace {

// One action's F and B durations on stage s (the pipeline simulation's action times): the
// stage's layers, or one chunk's L/v of them (interleaved).
pipeline::ActionTimes stage_action_times(const StepComponents& k, const ParallelConfig& p, std::size_t s) {
  const int v = p.chunks, L = k.stage_layers[s] / v;
  const double forward =
      k.layer_forward_s[s] + k.tp_calls_forward * k.tp_forward_s + k.cp_forward_s + k.ep_calls_forward * k.ep_s;
  const double backward =
      k.layer_backward_s[s] + k.tp_calls_backward * k.tp_backward_s + k.cp_backward_s + k.ep_calls_backward * k.ep_s;
  pipeline::ActionTimes t;
  t.p2p = k.pp_send_s;
  if (p.zero == 3) {  // per-layer gathers (and reduce-scatters) beside the layers
    t.forward = zero3_layers(L, forward, k.zero3_gather_s[s], 0, k.zero3_prefetch).end;
    t.backward = zero3_layers(L, backward, k.zero3_gather_s[s], k.zero3_scatter_s[s], k.zero3_prefetch).end;
    return t;
  }
  // ZeRO-2 reduce-scatters each action's gradients after it (one chunk's with v > 1)
  const double scatter = v == 1            ? k.dp_reduce_scatter_s[s]
                         : p.dp * p.cp > 1 ? nccl_time(CollectiveKind::reduce_scatter, k.dp_bytes[s] / v, k.dp_fabric)
                                           : 0;
  t.forward = L * forward;
  t.backward = L * backward + (p.zero == 2 ? scatter : 0);
  t.weight = L * k.layer_weight_s[s];  // (a zero-bubble schedule's W; the others run it inside B)
  return t;
}

// When the overlapped DP buckets of stage s are done: each chunk's buckets start with the last
// action that finishes its gradients (its last backward; a zero-bubble schedule's last W:
// pipeline::last_gradient_actions), beside that action's layers (cluster_sim's launch_buckets,
// in the simulation's order of actions), and the step waits for those of the chunk launched
// last. -1: the stage has none.
double buckets_end(const StepComponents& k, const ParallelConfig& p, const pipeline::Simulation& sim, int s) {
  const int v = p.chunks, L = k.stage_layers[std::size_t(s)] / v;
  const std::vector<const pipeline::TimedAction*> last = pipeline::last_gradient_actions(sim, s, v);
  const bool scatter = p.zero == 1;
  double end = -1;
  for (const auto& a : sim.actions)
    if (a.stage == s && &a == last[std::size_t(a.action.chunk)])
      end = gradient_buckets(a.begin, (a.end - a.begin) / L, L, k.dp_bytes[std::size_t(s)] / v, k.dp_bucket_bytes,
                             [&](double bytes) {
                               return nccl_time(scatter ? CollectiveKind::reduce_scatter : CollectiveKind::all_reduce,
                                                bytes, k.dp_fabric);
                             })
                .back()
                .end;
  return end;
}

}  // namespace

StepTime step_time(const StepComponents& k, const ParallelConfig& p) {
  const int P = int(k.stage_layers.size()), M = p.micro_batches;
  std::vector<pipeline::ActionTimes> times;
  times.reserve(std::size_t(P));
  for (int s = 0; s < P; ++s) times.push_back(stage_action_times(k, p, std::size_t(s)));
  const pipeline::Simulation sim = pipeline::simulate(pipeline::make_schedule(p.schedule, {P, M, p.chunks}), times);
  std::vector<double> last_end(std::size_t(P), 0.0);
  for (const auto& a : sim.actions) last_end[std::size_t(a.stage)] = std::max(last_end[std::size_t(a.stage)], a.end);
  StepTime best;
  double best_end = -1;
  for (int s = 0; s < P; ++s) {  // the end of the step on stage s (the simulator's close_step)
    const std::size_t i = std::size_t(s);
    const bool dp = p.dp * p.cp > 1;
    double closing = 0;
    if (k.dp_bucket_bytes > 0) {  // the buckets beside the last backward: the step waits for the last
      closing += std::max(0.0, buckets_end(k, p, sim, s) - last_end[i]);
    } else {
      if (dp && p.zero == 0) closing += k.dp_all_reduce_s[i];
      if (dp && p.zero == 1) closing += k.dp_reduce_scatter_s[i];
    }
    if (dp && (p.zero == 1 || p.zero == 2)) closing += k.dp_all_gather_s[i];
    const double end = std::max(last_end[i] + closing + k.optimizer_s[i], last_end[i] + (s > 0 ? k.pp_send_s : 0));
    if (end <= best_end) continue;
    best_end = end;
    const double L = k.stage_layers[i];
    StepTime t;
    t.busy = M * L * (k.layer_forward_s[i] + k.layer_backward_s[i]);
    t.tp = M * L * (k.tp_calls_forward * k.tp_forward_s + k.tp_calls_backward * k.tp_backward_s);
    t.cp = M * L * (k.cp_forward_s + k.cp_backward_s);
    t.ep = M * L * (k.ep_calls_forward + k.ep_calls_backward) * k.ep_s;
    const double in_actions =
        p.chunks * (times[i].forward + times[i].backward) - (t.busy + t.tp + t.cp + t.ep) / M;  // ZeRO-2/3's, exposed
    t.dp = closing + M * in_actions;
    t.optimizer = k.optimizer_s[i];
    t.stage = s;
    t.bubble = end - (t.busy + t.tp + t.cp + t.ep + t.dp + t.optimizer);  // waiting for other stages and their sends
    best = t;
  }
  return best;
}

StepBreakdown explain_step(const Plan& p) {
  const auto& cfg = p.config;
  const StepTime& t = p.time;
  StepBreakdown b;
  b.tp = t.tp, b.cp = t.cp, b.ep = t.ep, b.bubble = t.bubble, b.dp = t.dp, b.optimizer = t.optimizer;
  if (!p.model.has_shape()) return b;
  const int stages = cfg.pp, L = p.model.layers / stages + (t.stage < p.model.layers % stages ? 1 : 0);
  const double calls = double(cfg.micro_batches) * L, gap = p.cluster.kernel_gap_s;
  const LayerTime l = transformer_layer_time(p.cluster, p.model, cfg);
  KernelTime gemm = l.forward_gemm, memory = l.forward_memory;
  gemm += l.backward_gemm, memory += l.backward_memory;
  b.gaps = calls * (gemm.kernels + memory.kernels) * gap;
  b.attention = calls * (l.core.seconds - l.core.kernels * gap);
  b.gemm = calls * (gemm.seconds - gemm.kernels * gap) - b.attention;
  b.memory = calls * (memory.seconds - memory.kernels * gap);
  if (t.stage == stages - 1) {  // the LM head and its loss, once per micro-batch on the last stage
    const LayerTime head = lm_head_time(p.cluster, p.model, cfg.micro_batch_size, cfg.tp, cfg.cp);
    b.lm_head = cfg.micro_batches * (head.forward_s() + head.backward_s());
  }
  return b;
}

}  // namespace dtl::theory
