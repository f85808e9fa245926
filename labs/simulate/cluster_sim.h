// `dtlab simulate`: a discrete-event simulation of one training step on a cluster too large
// to run here, in the same event schema as a real run (core/trace/event.h).
//
//   compute     each layer's forward and backward for one micro-batch: its GEMMs and
//               memory-bound kernels from their shapes (core/theory/kernel_time.h), or
//               FLOPs / (peak · efficiency) with --compute flat
//   TP          the all-reduces inside each layer (Megatron's f and g), blocking, on the TP link
//   PP          the pipeline schedule's F/B/W order (core/theory/schedule.h, 1F1B by default;
//               interleaved: v chunks per stage, each action one chunk's L/v layers, virtual
//               stage c·P + s holding layers from (c·P + s)·L/(P·v) on; zb-v and dualpipev: 2
//               chunks in a V; a zero-bubble W: the layers' weight-gradient GEMMs, taken out of
//               their B), timed by the pipeline simulator; a message between stages costs α + bytes/β
//   DP          the gradients at the end of the step (or, with dp_bucket_bytes, bucket by bucket
//               during the last backward, on the comm stream): ZeRO-0's all-reduce; ZeRO-1's
//               reduce-scatter, the step on this rank's 1/dp, then an all-gather of the updated
//               parameters (Megatron's distributed optimizer); ZeRO-2's reduce-scatter after each
//               micro-batch's backward and the same all-gather; ZeRO-3's all-gathers before each
//               forward and backward and reduce-scatter after it
//   optimizer   once per step after the gradient reduction (stage_host_s): on a cluster AdamW
//               from its bytes on the GPU's memory bandwidth (workload.cpp); in the calibration
//               each stage's measured optimizer and host work, and the grid lab's --compute-us
//               floor on F and B
//   CP          ring attention's K/V hops inside each layer (core/theory/context_parallel.h):
//               what each hop lasts beyond the block of attention it overlaps, after the
//               layer's compute; the DP collectives run over the dp·cp ranks holding the same weights
//   links       per axis: NVLink when the group lies in one node, InfiniBand when it spans
//               nodes (rank order tp fastest, then cp, dp, pp: core/theory/plan.h);
//               ring, binomial tree, or hierarchical (ring in the node, ring across nodes)
//
// Ranks that behave alike are computed once: every dp replica and tp rank of a stage runs
// the same timeline, so a step costs one pipeline simulation of P stages, whatever the
// number of GPUs. Nothing overlaps but the bucketed DP all-reduce when asked (the rest of the
// communication is on the critical path, as in the planner), and every step is the same, so
// step k starts at k · step time.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/theory/collectives.h"
#include "core/theory/nccl_model.h"
#include "core/theory/schedule.h"

namespace dtl::sim {

// nccl (the default on a cluster): each collective timed as NCCL's tuning model times and
// chooses it (core/theory/nccl_model.h); ring, tree, hierarchical: the α-β textbook forms.
enum class CommAlgo { ring, tree, hierarchical, nccl };
CommAlgo parse_comm_algo(std::string_view name);  // throws UsageError
const char* comm_algo_name(CommAlgo a);

// How one axis' groups communicate, read from the group that holds rank 0.
struct AxisRoute {
  int size = 1;      // ranks in the group
  int per_node = 1;  // of them in one node
  theory::Link intra, inter;
  CommAlgo algo = CommAlgo::ring;
  // What the backend adds to every call beyond α-β, once per collective or send (0 on a
  // cluster; on thread ranks the measured wake-ups of the threads that carry it).
  double call_overhead_s = 0;
  theory::NcclFabric fabric;  // where the group runs, for algo nccl (set by workload_from_plan)
  bool crosses_nodes() const { return per_node < size; }
  theory::Link slowest() const { return crosses_nodes() ? inter : intra; }
  double all_reduce(double bytes) const;      // bytes: the vector each rank holds
  double reduce_scatter(double bytes) const;  // bytes: the whole vector
  double all_gather(double bytes) const;      // bytes: the whole vector
  double send(double bytes) const {
    return size < 2 ? 0 : call_overhead_s + slowest().alpha_s + bytes / slowest().beta_Bps;
  }
  std::string describe(const char* axis, bool point_to_point = false) const;
};

// group of `size` ranks `stride` apart starting at rank 0, `gpus_per_node` per node.
AxisRoute route(int size, long stride, int gpus_per_node, theory::Link intra, theory::Link inter, CommAlgo algo);

// One step's work on one GPU of each stage (every figure per GPU, per micro-batch).
struct Workload {
  int dp = 1, tp = 1, pp = 1, zero = 0, micro_batches = 1;
  int cp = 1;  // context parallelism: each GPU holds s/cp positions (every figure here is this GPU's)
  pipeline::ScheduleKind schedule = pipeline::ScheduleKind::one_f_one_b;
  int chunks = 1;                 // v: model chunks per stage (interleaved 1F1B; every stage's layers a multiple of v)
  std::vector<int> stage_layers;  // layers on each stage (size pp)
  double layer_forward_flops = 0, layer_backward_flops = 0;
  int tp_calls_forward = 2, tp_calls_backward = 2;  // all-reduces per layer
  double tp_bytes = 0;                              // per all-reduce
  double pp_bytes = 0;                              // per message between stages
  // Context parallelism per layer and micro-batch (cp > 1): the exchange's time not hidden behind
  // attention blocks and the bytes it carries; backward includes full recomputation's rerun forward.
  double cp_forward_exposed_s = 0, cp_backward_exposed_s = 0, cp_forward_bytes = 0, cp_backward_bytes = 0;
  std::string cp_forward_label, cp_backward_label;  // the exchange's spans (ring, all-gather or Ulysses)
  std::vector<double> dp_bytes;                     // per stage: its gradient bytes on one GPU
  // > 0: ZeRO-0's gradient all-reduce (ZeRO-1's reduce-scatter) overlaps the step's last
  // backward on each stage, bucket by bucket as PyTorch DDP and Megatron's overlap_grad_reduce
  // do: a bucket of this many bytes is reduced on the comm stream as soon as its layers'
  // backward is done (the buckets one after another); 0: one collective after the last backward.
  double dp_bucket_bytes = 0;
  std::vector<double> dp_gather_bytes;  // per stage: its 16-bit parameters (empty: dp_bytes)
  // ZeRO-3 (≥ 0): each layer's parameters gathered beside the layers, this many layers ahead, and its
  // gradients reduce-scattered after it (core/theory/step_model.h's zero3_layers); < 0: one gather
  // of the stage's parameters before each action and one reduce-scatter after its backward.
  int zero3_prefetch = -1;
  // Per TP collective, what it costs the layer (≥ 0: from the step model, overlapped or not; < 0: the
  // whole all-reduce of tp_bytes on tp_route)
  double tp_forward_s = -1, tp_backward_s = -1;
  // Expert parallelism per layer and micro-batch: the all-to-alls' seconds and bytes (step_model.h)
  double ep_forward_s = 0, ep_backward_s = 0, ep_forward_bytes = 0, ep_backward_bytes = 0;
  double flops_per_s = 1;   // achieved, per GPU
  double step_extra_s = 0;  // small collectives at the step's end (the loss)
  // Per stage, seconds per layer call: from the shapes (workload.h's roofline) or measured
  // (the calibration on thread ranks, labs/cli/simulate_calibrate.cpp); empty: FLOPs / rate.
  std::vector<double> stage_layer_forward_s, stage_layer_backward_s;
  // Of a layer's backward, its weight gradients (a zero-bubble schedule's W): per stage seconds
  // (empty: layer_weight_flops / rate)
  std::vector<double> stage_layer_weight_s;
  double layer_weight_flops = 0;
  // Per stage, once per step after its gradient reduction: the optimizer step (a cluster,
  // workload.cpp) or the measured optimizer and host work (the calibration); empty: none.
  std::vector<double> stage_host_s;
  std::string host_label = "optimizer and host work";
  double action_floor_s = 0;                         // the grid lab's --compute-us: an F lasts at least this, a B twice
  AxisRoute tp_route, dp_route, pp_route, cp_route;  // dp_route: the dp·cp ranks holding the same weights
  double tokens_per_step = 0, model_flops_per_step = 0, peak_flops_per_gpu = 0;
  int gpus() const { return dp * tp * pp * cp; }
  int replicas() const { return dp * cp; }  // ranks the gradients are reduced over (ZeRO's shards)
};
// Layers on each of P stages: L/P each, the first L mod P one more (as the grid lab splits).
std::vector<int> split_layers(int layers, int stages);

enum class SpanKind {
  compute,
  collective,
  send,
  action,
  step,
  host
};  // host: optimizer, host work, --compute-us's wait
struct Span {
  double begin = 0, end = 0;  // seconds from the step's start
  SpanKind kind = SpanKind::compute;
  std::string label;  // "F", "B", "layer 3 forward", "all_reduce", ...
  char axis = 0;      // 'd', 't', 'p', 'c', 'e' for communication
  int micro_batch = -1;
  double bytes = 0;
  Role role;                    // what it is, for the trace (core/trace/vocab.h): F/B, a send's direction, a collective
  bool on_comm_stream = false;  // runs beside compute (an overlapped DP bucket), not after it
  int to_stage = -1;            // a send: the stage it goes to (a V schedule's second chunk sends backwards)
  bool keeps_activations = false;  // a B of the input gradient only: the activations stay for its W
};

struct StageTimeline {
  std::vector<Span> spans;                                               // in time order of their start
  double end = 0;                                                        // the stage's last span ends
  double compute = 0, tp = 0, pp = 0, dp = 0, cp = 0, ep = 0, host = 0;  // seconds spent in each (cp: exposed hops)
  double dp_exposed =
      0;  // of dp: what the step waits for after the last backward (gradients, then ZeRO-1/2's parameters)
};

struct SimResult {
  std::vector<StageTimeline> stages;  // the distinct timelines: one per stage
  double step_s = 0;
  double pipeline_bubble = 0;        // idle share of the pipeline part (pipeline::Simulation)
  double pipeline_bubble_tiled = 0;  // the same with steps tiled back to back (Simulation::bubble_tiled)
  double tokens_per_s = 0, mfu = 0;
  double elapsed_s = 0;  // how long the simulation itself took
};

// Throws UsageError for a workload the schedule cannot run (e.g. 1F1B with M < P).
SimResult simulate_step(const Workload& w);

}  // namespace dtl::sim
