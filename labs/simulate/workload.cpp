// Workloads for the step simulation (workload.h).
#include "labs/simulate/workload.h"

#include "core/error.h"
#include "core/theory/kernel_time.h"
#include "core/theory/step_model.h"
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

// The roofline's components are the planner's (core/theory/step_model.h): the same layer
// times, optimizer steps and exposed CP exchange, so plan and simulate share one model.
void copy_step_components(const theory::StepComponents& k, Workload& w) {
  w.stage_layer_forward_s = k.layer_forward_s;
  w.stage_layer_backward_s = k.layer_backward_s;
  w.stage_layer_weight_s = k.layer_weight_s;
  w.cp_forward_exposed_s = k.cp_forward_s, w.cp_backward_exposed_s = k.cp_backward_s;
  w.cp_forward_bytes = k.cp_forward_bytes, w.cp_backward_bytes = k.cp_backward_bytes;
}

// The optimizer step of each stage's GPU, memory-bound (step_model.h: grad + 2·K + param bytes
// per parameter, 28 B under 2+2+12, on this rank's 1/(dp·cp) with ZeRO ≥ 1).
void time_optimizer_step(const theory::Plan& p, const theory::StepComponents& k, Workload& w) {
  w.stage_host_s = k.optimizer_s;
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
  const double block_f = theory::cp_block_forward_flops(p.model, cfg) / w.flops_per_s, block_b = 2 * block_f;
  const int reruns = cfg.recompute == theory::Recompute::full ? 1 : 0;
  for (const theory::CpLine& l : theory::cp_lines(p.model, cfg, w.cp_route.slowest(), block_f, block_b)) {
    if (compute == ComputeModel::roofline) break;  // (the roofline's were copied from the step's components)
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
  Workload w;
  w.dp = cfg.dp, w.tp = cfg.tp, w.pp = cfg.pp, w.cp = cfg.cp, w.zero = cfg.zero, w.micro_batches = cfg.micro_batches;
  w.schedule = schedule;
  w.stage_layers = theory::stage_layer_counts(m.layers, cfg);              // uneven ends as the plan
  const double tokens_mb = double(cfg.micro_batch_size) * m.seq / cfg.cp;  // this GPU's s/cp positions
  const double forward_per_token = p.model_flops_per_token / 3;
  w.layer_forward_flops = forward_per_token / m.layers * tokens_mb / cfg.tp;
  w.layer_backward_flops = (p.hardware_flops_per_token - forward_per_token) / m.layers * tokens_mb / cfg.tp;
  // W: the weight gradients, as many FLOPs as the linear layers' forward (2 per parameter and token)
  w.layer_weight_flops = (forward_per_token - 4.0 * m.layers * m.hidden * m.seq) / m.layers * tokens_mb / cfg.tp;
  w.tp_calls_forward = 2;
  w.tp_calls_backward = cfg.recompute == theory::Recompute::full ? 4 : 2;
  const double sbh = tokens_mb * m.hidden;
  w.tp_bytes = sbh * kBytes16;
  w.pp_bytes = sbh / cfg.tp * kBytes16;
  w.flops_per_s = c.peak_flops * cfg.efficiency;  // (flat only: the roofline times each layer below)
  const theory::StepComponents k = theory::step_components(p);
  if (compute == ComputeModel::roofline) copy_step_components(k, w);
  // What the run's practice makes of the communication (core/theory/practice.h), as the plan has it:
  // the gradients in their precision, the parameters gathered in 16 bits, TP exposed or overlapped,
  // the DP reduction in buckets beside the last backward, ZeRO-3's gathers per layer.
  w.dp_bytes = k.dp_bytes, w.dp_gather_bytes = k.dp_gather_bytes;
  w.tp_forward_s = k.tp_forward_s, w.tp_backward_s = k.tp_backward_s;
  w.dp_bucket_bytes = k.dp_bucket_bytes;
  w.zero3_prefetch = k.zero3_prefetch;
  w.ep_forward_s = k.ep_calls_forward * k.ep_s, w.ep_backward_s = k.ep_calls_backward * k.ep_s;
  w.ep_forward_bytes = k.ep_calls_forward * k.ep_bytes, w.ep_backward_bytes = k.ep_calls_backward * k.ep_bytes;
  time_optimizer_step(p, k, w);
  const int gpn = c.gpus_per_node;
  // rank order tp, cp, dp, pp (core/theory/plan.h); the gradients over the dp·cp replicas
  w.tp_route = route(cfg.tp, 1, gpn, c.intra, c.inter, algo);
  w.cp_route = route(cfg.cp, cfg.tp, gpn, c.intra, c.inter, CommAlgo::ring);
  w.dp_route = route(cfg.dp * cfg.cp, cfg.tp, gpn, c.intra, c.inter, algo);
  w.pp_route = route(cfg.pp, long(cfg.tp) * cfg.cp * cfg.dp, gpn, c.intra, c.inter, algo);
  for (AxisRoute* r : {&w.tp_route, &w.cp_route, &w.dp_route, &w.pp_route})  // NCCL's model needs the GPUs too
    r->fabric = theory::cluster_fabric(c, r->size, r->per_node);
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
  w.layer_weight_flops = w.layer_forward_flops;  // (the MLP's weight gradients: its forward's FLOPs)
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
