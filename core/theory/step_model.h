// One performance model under `dtlab plan` and `dtlab simulate` (issue 45): the components of a
// training step, computed once here, and the step time they add up to. The simulator
// (labs/simulate) copies the same components into its workload and lays them out event by
// event; plan() runs the same pipeline simulation (schedule_simulator.cpp) on them without the
// events, so both report the same step time for the same layout (tests/labs/plan_simulate_test.cpp).
//
// Per GPU of each pipeline stage, per micro-batch:
//   compute        each layer's GEMMs and memory-bound kernels from their shapes on the GPU's
//                  achieved rates (kernel_time.h); the LM head on the last stage
//   TP             2 all-reduces of b·s·h 16-bit values per layer forward, 2 backward (4 with full
//                  recomputation), timed as NCCL would (nccl_model.h) on the TP group's tier
//   CP             ring attention's exposed hops (context_parallel.h), the blocks timed from shapes
//   PP             one send per boundary: α + bytes/β of the slowest tier the group spans
//   ZeRO           ZeRO-3 all-gathers the stage's parameters before each forward and backward;
//                  ZeRO-2/3 reduce-scatter its gradients after each backward
// Once per step, after the stage's last backward: ZeRO-0's gradient all-reduce or ZeRO-1's
// reduce-scatter, AdamW on the GPU's memory bandwidth (on 1/(dp·cp) with ZeRO ≥ 1), ZeRO-1/2's
// all-gather of the parameters. Nothing overlaps (the simulator's --dp-bucket-mb can).
// The 1F1B pipeline: step = the latest stage's end.
#pragma once

#include <algorithm>
#include <vector>

#include "core/theory/plan.h"

namespace dtl::theory {

// The ranks of one group in one node: of `size` ranks `stride` apart from rank 0, those on its node.
int group_per_node(int size, long stride, int gpus_per_node);

struct StepComponents {
  std::vector<int> stage_layers;                          // layers on each stage
  std::vector<double> layer_forward_s, layer_backward_s;  // compute per layer call, per stage
  std::vector<double> layer_weight_s;  // of layer_backward_s, the weight gradients (a zero-bubble schedule's W)
  int tp_calls_forward = 2, tp_calls_backward = 2;  // all-reduces per layer
  double tp_bytes = 0, tp_s = 0;                    // per all-reduce
  // What each TP collective costs the layer: tp_s exposed; overlapped, what lasts beyond the GEMM
  // beside it (half the layer's linear GEMMs of that pass: TransformerEngine's userbuffers)
  double tp_forward_s = 0, tp_backward_s = 0;
  // Expert parallelism: per MoE layer and micro-batch, an all-to-all to dispatch and one to combine,
  // forward and backward (again with full recomputation), each of (b·n/t)·k·h 16-bit values per rank
  int ep_calls_forward = 2, ep_calls_backward = 2;
  double ep_bytes = 0, ep_s = 0;  // per all-to-all
  NcclFabric ep_fabric;
  double dp_bucket_bytes = 0;                           // > 0: ZeRO-0/1's reduction overlaps the last backward
  int zero3_prefetch = 1;                               // ZeRO-3: layers gathered ahead (practice.h)
  std::vector<double> zero3_gather_s, zero3_scatter_s;  // ZeRO-3: one layer's all-gather, reduce-scatter, per stage
  std::vector<double> dp_gather_bytes;                  // per stage: its 16-bit parameters on one GPU
  double cp_forward_s = 0, cp_backward_s = 0;           // exposed exchange per layer
  double cp_forward_bytes = 0, cp_backward_bytes = 0;
  double pp_bytes = 0, pp_send_s = 0;  // per message between stages
  std::vector<double> dp_bytes;        // per stage: its gradients on one GPU (fp32 or 16-bit)
  std::vector<double> dp_all_reduce_s, dp_reduce_scatter_s, dp_all_gather_s;  // of a stage's dp_bytes
  std::vector<double> optimizer_s;                                            // per stage, once per step
  NcclFabric tp_fabric, dp_fabric;                                            // where TP and the gradient reduction run
};
StepComponents step_components(const Plan& p);

// ZeRO-3 gathers each layer's parameters before it on a comm stream (FSDP, DeepSpeed's ZeRO-3):
// gather i starts when gather i−1 is done and, with prefetch k ≥ 1, once layer i−k has started
// (k = 0: once layer i−1 has ended); layer i starts when layer i−1 has ended and its gather is done;
// in backward each layer's gradients are reduce-scattered after it on a second stream. Seconds
// from the action's start; end: the last layer's (or the last reduce-scatter's) end.
struct LayerOverlap {
  std::vector<double> gather_begin, compute_begin, scatter_begin;
  double end = 0;
};
LayerOverlap zero3_layers(int layers, double layer_s, double gather_s, double scatter_s, int prefetch);

// ZeRO-0/1's gradient reduction in buckets beside the last backward (PyTorch DDP, Megatron's
// --overlap-grad-reduce): layer i of L ends at begin + (i+1)·layer_s and its bytes/L join the open
// bucket, launched when it holds bucket_bytes or at the last layer, after the bucket before it.
struct Bucket {
  double begin = 0, end = 0, bytes = 0;
};
template <class Seconds>  // seconds(bytes): one bucket's collective
std::vector<Bucket> gradient_buckets(double begin, double layer_s, int layers, double bytes, double bucket_bytes,
                                     Seconds seconds) {
  std::vector<Bucket> out;
  double filled = 0, free_at = 0, at = begin;
  for (int i = 0; i < layers; ++i) {
    at += layer_s;
    filled += bytes / layers;
    if (filled < bucket_bytes && i + 1 < layers) continue;
    const double start = out.empty() ? at : std::max(at, free_at);
    out.push_back({start, start + seconds(filled), filled});
    free_at = out.back().end, filled = 0;
  }
  return out;
}

// The 1F1B step from the components, split for the report (the stage that ends last).
StepTime step_time(const StepComponents& k, const ParallelConfig& p);

// Where the step's seconds go on the stage that ends last (`dtlab simulate --explain`): its layers'
// GEMMs at their achieved rate, the attention core, the memory-bound kernels and the gaps after
// every kernel (each without the others' gaps), the LM head, then StepTime's exposed communication,
// bubble (with the sends) and optimizer. total() is plan's step time.
struct StepBreakdown {
  double gemm = 0, attention = 0, memory = 0, gaps = 0, lm_head = 0;
  double tp = 0, cp = 0, ep = 0, bubble = 0, dp = 0, optimizer = 0;
  double total() const { return gemm + attention + memory + gaps + lm_head + tp + cp + ep + bubble + dp + optimizer; }
};
StepBreakdown explain_step(const Plan& p);

// Seconds of one NCCL collective of `bytes` over `size` ranks `stride` apart on cluster c.
double group_collective_s(const ClusterSpec& c, CollectiveKind what, double bytes, int size, long stride);

}  // namespace dtl::theory
