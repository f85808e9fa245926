// The step's components and its 1F1B time (step_model.h).
#include "core/theory/step_model.h"

#include <algorithm>

#include "core/theory/kernel_time.h"
#include "core/theory/schedule.h"
#include "core/theory/zero.h"

namespace dtl::theory {

namespace {

constexpr double kBytes16 = 2;  // activations, gradients and parameters travel in 16 bits

std::vector<int> layers_on_stages(int layers, int stages) {  // L/P each, the first L mod P one more
  std::vector<int> out(std::size_t(stages), layers / stages);
  for (int s = 0; s < layers % stages; ++s) ++out[std::size_t(s)];
  return out;
}

// Seconds per layer call from the shapes; the LM head spread over the last stage's layers.
void time_layers(const Plan& p, StepComponents& k) {
  const auto& cfg = p.config;
  const LayerTime layer = transformer_layer_time(p.cluster, p.model, cfg.micro_batch_size, cfg.tp, cfg.recompute, cfg.cp);
  const LayerTime head = lm_head_time(p.cluster, p.model, cfg.micro_batch_size, cfg.tp, cfg.cp);
  k.layer_forward_s.assign(k.stage_layers.size(), layer.forward_s());
  k.layer_backward_s.assign(k.stage_layers.size(), layer.backward_s());
  const double last_layers = k.stage_layers.back();
  k.layer_forward_s.back() += head.forward_s() / last_layers;
  k.layer_backward_s.back() += head.backward_s() / last_layers;
  if (cfg.cp < 2) return;
  // Ring attention's hops beyond the blocks they overlap (context_parallel.h); full
  // recomputation reruns the forward's exchange in backward.
  const Link cp_link = group_per_node(cfg.cp, cfg.tp, p.cluster.gpus_per_node) < cfg.cp ? p.cluster.inter : p.cluster.intra;
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
  for (int L : k.stage_layers) {
    const double params = p.psi * L / p.model.layers / cfg.tp;
    const double bytes = params * kBytes16;
    k.dp_bytes.push_back(bytes);
    k.dp_all_reduce_s.push_back(replicas > 1 ? nccl_time(Collective::all_reduce, bytes, k.dp_fabric) : 0);
    k.dp_reduce_scatter_s.push_back(replicas > 1 ? nccl_time(Collective::reduce_scatter, bytes, k.dp_fabric) : 0);
    k.dp_all_gather_s.push_back(replicas > 1 ? nccl_time(Collective::all_gather, bytes, k.dp_fabric) : 0);
    k.optimizer_s.push_back(params / shards * touched / c.memory_Bps);
  }
}

}  // namespace

int group_per_node(int size, long stride, int gpus_per_node) {
  int n = 0;
  for (long i = 0; i < size; ++i) n += (i * stride) / gpus_per_node == 0 ? 1 : 0;
  return n;
}

double group_collective_s(const ClusterSpec& c, Collective what, double bytes, int size, long stride) {
  if (size < 2) return 0;
  return nccl_time(what, bytes, cluster_fabric(c, size, group_per_node(size, stride, c.gpus_per_node)));
}

StepComponents step_components(const Plan& p) {
  const auto& m = p.model;
  const auto& c = p.cluster;
  const auto& cfg = p.config;
  StepComponents k;
  k.stage_layers = layers_on_stages(m.layers, cfg.pp);
  time_layers(p, k);
  k.tp_calls_backward = cfg.recompute == Recompute::full ? 4 : 2;
  const double sbh = double(cfg.micro_batch_size) * m.seq / cfg.cp * m.hidden;  // this GPU's s/cp positions
  k.tp_bytes = sbh * kBytes16;
  k.tp_fabric = cluster_fabric(c, cfg.tp, group_per_node(cfg.tp, 1, c.gpus_per_node));
  k.tp_s = cfg.tp > 1 ? nccl_time(Collective::all_reduce, k.tp_bytes, k.tp_fabric) : 0;
  k.pp_bytes = sbh / cfg.tp * kBytes16;
  const long pp_stride = long(cfg.tp) * cfg.cp * cfg.dp;
  const Link pp_link = group_per_node(cfg.pp, pp_stride, c.gpus_per_node) < cfg.pp ? c.inter : c.intra;
  k.pp_send_s = cfg.pp > 1 ? pp_link.alpha_s + k.pp_bytes / pp_link.beta_Bps : 0;
  time_data_parallel(p, k);
  return k;
}

StepTime step_time(const StepComponents& k, const ParallelConfig& p) {
  const int P = int(k.stage_layers.size()), M = p.micro_batches;
  std::vector<pipeline::ActionTimes> times;
  for (int s = 0; s < P; ++s) {
    const double L = k.stage_layers[std::size_t(s)];
    const double before = p.zero == 3 ? k.dp_all_gather_s[std::size_t(s)] : 0;
    const double after = p.zero >= 2 ? k.dp_reduce_scatter_s[std::size_t(s)] : 0;
    pipeline::ActionTimes t;
    t.forward = before + L * (k.layer_forward_s[std::size_t(s)] + k.tp_calls_forward * k.tp_s + k.cp_forward_s);
    t.backward = before + L * (k.layer_backward_s[std::size_t(s)] + k.tp_calls_backward * k.tp_s + k.cp_backward_s) + after;
    t.p2p = k.pp_send_s;
    times.push_back(t);
  }
  const pipeline::Simulation sim =
      pipeline::simulate(pipeline::make_schedule(pipeline::ScheduleKind::one_f_one_b, {P, M, 1}), times);
  std::vector<double> last_end(std::size_t(P), 0.0);
  for (const auto& a : sim.actions) last_end[std::size_t(a.stage)] = std::max(last_end[std::size_t(a.stage)], a.end);
  StepTime best;
  double best_end = -1;
  for (int s = 0; s < P; ++s) {  // the end of the step on stage s (the simulator's close_step)
    const std::size_t i = std::size_t(s);
    const bool dp = p.dp * p.cp > 1;
    double closing = 0;
    if (dp && p.zero == 0) closing += k.dp_all_reduce_s[i];
    if (dp && p.zero == 1) closing += k.dp_reduce_scatter_s[i];
    if (dp && (p.zero == 1 || p.zero == 2)) closing += k.dp_all_gather_s[i];
    const double end = std::max(last_end[i] + closing + k.optimizer_s[i], last_end[i] + (s > 0 ? k.pp_send_s : 0));
    if (end <= best_end) continue;
    best_end = end;
    const double L = k.stage_layers[i];
    StepTime t;
    t.busy = M * L * (k.layer_forward_s[i] + k.layer_backward_s[i]);
    t.tp = M * L * (k.tp_calls_forward + k.tp_calls_backward) * k.tp_s;
    t.cp = M * L * (k.cp_forward_s + k.cp_backward_s);
    t.dp = closing + M * ((p.zero == 3 ? 2 * k.dp_all_gather_s[i] : 0) + (p.zero >= 2 ? k.dp_reduce_scatter_s[i] : 0));
    t.optimizer = k.optimizer_s[i];
    t.bubble = end - (t.busy + t.tp + t.cp + t.dp + t.optimizer);  // waiting for other stages and their sends
    best = t;
  }
  return best;
}

}  // namespace dtl::theory
