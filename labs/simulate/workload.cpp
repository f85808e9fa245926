// Workloads for the step simulation (workload.h).
#include "labs/simulate/workload.h"

#include "core/error.h"
#include "core/theory/kernel_time.h"
#include "core/theory/zero.h"

namespace dtl::sim {

namespace {

constexpr double kBytes16 = 2;  // 16-bit activations and gradients, as the planner counts them
constexpr double kBytes32 = 4;  // the grid lab trains in fp32

}  // namespace

const char* compute_model_name(ComputeModel m) {
  for (const auto& [name, model] : kComputeModelNames)
    if (model == m) return name;
  return "?";
}

namespace {

// Seconds per layer call on each stage from the shapes (kernel_time.h); the last stage
// also runs the LM head, spread over its layers so that a stage's F and B add it once.
void time_layers_from_shapes(const theory::Plan& p, Workload& w) {
  const auto& cfg = p.config;
  const theory::LayerTime layer =
      theory::transformer_layer_time(p.cluster, p.model, cfg.micro_batch_size, cfg.tp, cfg.recompute, cfg.cp);
  const theory::LayerTime head = theory::lm_head_time(p.cluster, p.model, cfg.micro_batch_size, cfg.tp, cfg.cp);
  w.stage_layer_forward_s.assign(w.stage_layers.size(), layer.forward_s());
  w.stage_layer_backward_s.assign(w.stage_layers.size(), layer.backward_s());
  const double last_layers = w.stage_layers.back();
  w.stage_layer_forward_s.back() += head.forward_s() / last_layers;
  w.stage_layer_backward_s.back() += head.backward_s() / last_layers;
}

// The optimizer step of each stage's GPU, memory-bound: AdamW reads every parameter's
// gradient and optimizer state (fp32 master, m, v) and writes the state and the parameter
// back, grad + 2·K + param bytes (28 B per parameter under 2+2+12), at the GPU's memory
// bandwidth; ZeRO-1 and up step only this rank's 1/(dp·cp) of the stage's Ψ·L_s/(L·t)
// parameters (the distributed optimizer, sharded over the dp·cp replicas: core/theory/plan.h).
void time_optimizer_step(const theory::Plan& p, Workload& w) {
  const double touched = theory::optimizer_step_bytes(theory::zero_precision(p.config.convention));
  const double shards = p.config.zero >= 1 ? double(p.config.dp) * p.config.cp : 1;
  w.stage_host_s.clear();
  for (int L : w.stage_layers) {
    const double params = p.psi * L / p.model.layers / p.config.tp / shards;
    w.stage_host_s.push_back(params * touched / p.cluster.memory_Bps);
  }
  w.host_label = p.config.zero >= 1 ? (p.config.cp > 1 ? "optimizer step (this rank's 1/(dp·cp))"
                                                       : "optimizer step (this rank's 1/dp)")
                                    : "optimizer step";
}

// Context parallelism's exchange per layer and micro-batch (core/theory/context_parallel.h):
// the ring's hops beyond the blocks they overlap, the blocks timed as the compute is (roofline:
// the block's GEMMs; flat: its FLOPs at the rate), all-gather's and Ulysses' collectives whole;
// full recomputation reruns the forward's exchange in backward.
void time_cp_ring(const theory::Plan& p, Workload& w, ComputeModel compute) {
  const auto& cfg = p.config;
  if (cfg.cp < 2) return;
  double block_f = theory::cp_block_forward_flops(p.model, cfg) / w.flops_per_s, block_b = 2 * block_f;
  if (compute == ComputeModel::roofline) {
    const theory::LayerTime l =
        theory::transformer_layer_time(p.cluster, p.model, cfg.micro_batch_size, cfg.tp, cfg.recompute, cfg.cp);
    block_f = l.block_forward_s, block_b = l.block_backward_s;
  }
  const int reruns = cfg.recompute == theory::Recompute::full ? 1 : 0;
  for (const theory::CpLine& l : theory::cp_lines(p.model, cfg, w.cp_route.slowest(), block_f, block_b)) {
    const double bytes = l.calls * l.bytes_per_call;
    (l.backward ? w.cp_backward_exposed_s : w.cp_forward_exposed_s) += l.exposed_s;
    (l.backward ? w.cp_backward_bytes : w.cp_forward_bytes) += bytes;
    if (!l.backward) w.cp_backward_exposed_s += reruns * l.exposed_s, w.cp_backward_bytes += reruns * bytes;
  }
  const bool ring = cfg.cp_algo == theory::CpAlgo::ring;
  w.cp_forward_label = ring                                        ? "ring K/V hops (exposed)"
                       : cfg.cp_algo == theory::CpAlgo::all_gather ? "all_gather K/V"
                                                                   : "all_to_all Q/K/V and output (Ulysses)";
  w.cp_backward_label = ring                                        ? "ring K/V + dK/dV hops (exposed)"
                        : cfg.cp_algo == theory::CpAlgo::all_gather ? "reduce_scatter dK/dV"
                                                                    : "all_to_all gradients (Ulysses)";
}

}  // namespace

Workload workload_from_plan(const theory::Plan& p, pipeline::ScheduleKind schedule, CommAlgo algo,
                            ComputeModel compute) {
  const auto& m = p.model;
  const auto& c = p.cluster;
  const auto& cfg = p.config;
  if (!m.has_shape())
    throw UsageError("simulate needs the model's shape (--layers --hidden --heads --seq), not only --params");
  if (m.experts > 0)
    throw UsageError(
        "simulate has no mixture-of-experts layers yet: `dtlab plan --experts` plans their memory and "
        "all-to-all traffic");
  Workload w;
  w.dp = cfg.dp, w.tp = cfg.tp, w.pp = cfg.pp, w.cp = cfg.cp, w.zero = cfg.zero, w.micro_batches = cfg.micro_batches;
  w.schedule = schedule;
  w.stage_layers = split_layers(m.layers, cfg.pp);
  const double tokens_mb = double(cfg.micro_batch_size) * m.seq / cfg.cp;  // this GPU's s/cp positions
  const double forward_per_token = p.model_flops_per_token / 3;
  w.layer_forward_flops = forward_per_token / m.layers * tokens_mb / cfg.tp;
  w.layer_backward_flops = (p.hardware_flops_per_token - forward_per_token) / m.layers * tokens_mb / cfg.tp;
  w.tp_calls_forward = 2;
  w.tp_calls_backward = cfg.recompute == theory::Recompute::full ? 4 : 2;
  const double sbh = tokens_mb * m.hidden;
  w.tp_bytes = sbh * kBytes16;
  w.pp_bytes = sbh / cfg.tp * kBytes16;
  for (int L : w.stage_layers) w.dp_bytes.push_back(p.psi * L / m.layers / cfg.tp * kBytes16);  // replicated over cp
  w.flops_per_s = c.peak_flops * cfg.efficiency;  // (flat only: the roofline times each layer below)
  if (compute == ComputeModel::roofline) time_layers_from_shapes(p, w);
  time_optimizer_step(p, w);
  const int gpn = c.gpus_per_node;
  // rank order tp, cp, dp, pp (core/theory/plan.h); the gradients over the dp·cp replicas
  w.tp_route = route(cfg.tp, 1, gpn, c.intra, c.inter, algo);
  w.cp_route = route(cfg.cp, cfg.tp, gpn, c.intra, c.inter, CommAlgo::ring);
  w.dp_route = route(cfg.dp * cfg.cp, cfg.tp, gpn, c.intra, c.inter, algo);
  w.pp_route = route(cfg.pp, long(cfg.tp) * cfg.cp * cfg.dp, gpn, c.intra, c.inter, algo);
  time_cp_ring(p, w, compute);
  w.tokens_per_step = p.tokens_per_step;
  w.model_flops_per_step = p.model_flops_per_token * p.tokens_per_step;
  w.peak_flops_per_gpu = c.peak_flops;
  return w;
}

double grid_step_flops(const GridShapeSpec& g) {
  const double h = g.hidden;
  return 3 * 2 * 8 * h * h * g.layers * double(g.batch) * g.seq;
}

Workload workload_from_grid(const GridShapeSpec& g, theory::Link link, const GridTiming& t) {
  const int rows_total = g.batch * g.seq;
  if (g.dp < 1 || g.tp < 1 || g.pp < 1 || rows_total % (g.dp * g.micro_batches) != 0)
    throw UsageError("the grid's batch·seq must split evenly over dp · micro-batches");
  Workload w;
  w.dp = g.dp, w.tp = g.tp, w.pp = g.pp, w.micro_batches = g.micro_batches;
  w.stage_layers = split_layers(g.layers, g.pp);
  const double h = g.hidden, R = double(rows_total) / (g.dp * g.micro_batches);
  w.layer_forward_flops = 2 * 8 * h * h * R / g.tp;
  w.layer_backward_flops = 2 * w.layer_forward_flops;
  w.tp_calls_forward = w.tp_calls_backward = 1;
  w.tp_bytes = R * h * kBytes32;
  w.pp_bytes = R * h * kBytes32;
  // A rank's gradients: c_fc's weight and bias and c_proj's weight split over tp, c_proj's bias whole.
  for (int L : w.stage_layers) w.dp_bytes.push_back(L * (8 * h * h / g.tp + 4 * h / g.tp + h) * kBytes32);
  const bool measured = !t.block_forward_s.empty();
  w.flops_per_s = measured ? 1.0 : t.flops_per_s;  // (unused with measured block times; check() wants > 0)
  if (measured) w.stage_layer_forward_s = t.block_forward_s, w.stage_layer_backward_s = t.block_backward_s;
  w.stage_host_s = t.host_s;
  w.action_floor_s = t.compute_us * 1e-6;
  const int one_node = g.dp * g.tp * g.pp;  // thread ranks share one emulated link class
  auto on_link = [&](int size, long stride) {
    AxisRoute r = route(size, stride, one_node, link, link, CommAlgo::ring);
    r.call_overhead_s = t.call_overhead_s;
    return r;
  };
  w.tp_route = on_link(g.tp, 1);
  w.dp_route = on_link(g.dp, g.tp);
  w.pp_route = on_link(g.pp, long(g.tp) * g.dp);
  // The lab sums the loss over dp (last stage) and takes its max over the world: two 8-byte all-reduces.
  w.step_extra_s = w.dp_route.all_reduce(8) + on_link(w.gpus(), 1).all_reduce(8);
  w.tokens_per_step = rows_total;
  w.model_flops_per_step = grid_step_flops(g);
  w.peak_flops_per_gpu = w.flops_per_s;  // (the calibration reads no MFU)
  return w;
}

}  // namespace dtl::sim
