// The work `dtlab simulate` times (cluster_sim.h), built from a plan (a transformer on a
// cluster preset) or from a grid-lab configuration (the MLP on thread ranks, for calibration).
#pragma once

#include <utility>

#include "core/theory/plan.h"
#include "labs/simulate/cluster_sim.h"

namespace dtl::sim {

// How a transformer's compute is timed:
//   roofline  each layer's GEMMs and memory-bound kernels from their shapes on the GPU's
//             documented peak and bandwidth, quantized onto its SMs (core/theory/kernel_time.h);
//             the LM head on the last stage (the default)
//   flat      the planner's FLOPs / (peak · efficiency), the same for every layer and model
enum class ComputeModel { roofline, flat };
// The option's words for each model (`dtlab simulate --compute`: the command maps them to the enum).
inline constexpr std::pair<const char*, ComputeModel> kComputeModelNames[] = {{"roofline", ComputeModel::roofline},
                                                                              {"flat", ComputeModel::flat}};
const char* compute_model_name(ComputeModel m);

// A transformer as the planner counts it (core/theory/plan.h): 16-bit activations and
// gradients; TP 2 all-reduces per layer forward and 2 backward (4 with full recomputation);
// compute per `compute` (flat: model FLOPs per token 6Ψ + 12·L·h·s spread evenly over the
// layers, one third forward, the backward adding the recomputed forward); each stage's
// AdamW step memory-bound on the GPU's bandwidth, on 1/dp of its parameters with ZeRO ≥ 1.
// With cp > 1 every GPU computes s/cp positions (messages and compute ÷ cp, attention as cp
// blocks), ring attention's exposed hops inside each layer (core/theory/context_parallel.h),
// the gradients reduced and ZeRO-sharded over dp·cp.
Workload workload_from_plan(const theory::Plan& p, pipeline::ScheduleKind schedule, CommAlgo algo,
                            ComputeModel compute = ComputeModel::roofline);

// The grid lab's MLP (labs/grid): `layers` blocks h → 4h → h (8h² + 5h parameters), fp32,
// R = batch·seq / (dp·M) rows per micro-batch, one TP all-reduce per block forward and one
// backward, the loss's two 8-byte all-reduces (dp, world) at the end, every rank on one
// emulated link (α, β).
struct GridShapeSpec {
  int dp = 1, tp = 1, pp = 1, layers = 4, hidden = 64, seq = 16, batch = 8, micro_batches = 4;
};
// How that grid's compute is timed on this machine.
struct GridTiming {
  double flops_per_s = 0;  // every block's FLOPs at this rate (measured on one rank)...
  // ...or, when given, seconds per block call on each stage, measured on the same thread
  // ranks (the same contention for the cores) without the emulated link
  std::vector<double> block_forward_s, block_backward_s;
  std::vector<double> host_s;  // per stage, per step: the optimizer and host work, measured (empty: none)
  double call_overhead_s = 0;  // per collective or send beyond α-β: the threads backend's wake-ups, measured
  double compute_us = 0;       // the lab's --compute-us: an F lasts at least this many µs, a B twice
};
Workload workload_from_grid(const GridShapeSpec& g, theory::Link link, const GridTiming& t);
// FLOPs one step of that MLP costs in all (forward 2·8h² per row and block, backward twice that).
double grid_step_flops(const GridShapeSpec& g);

}  // namespace dtl::sim
